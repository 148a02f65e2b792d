// Package anthropicapi is a scripted mock of the Anthropic Messages API
// on 127.0.0.1, for running the real Claude Code CLI offline in tests
// (ANTHROPIC_BASE_URL). It answers POST /v1/messages, streaming (SSE)
// or not, and POST /v1/messages/count_tokens; it records every request
// so a test can check what the model was sent.
//
// # Scripts
//
// A Script is the model's side of one user prompt: the reply to the
// prompt, then the reply to each round of tool results. Which reply a
// request gets is worked out from the request alone: the newest user
// message whose text contains a script's Match is the prompt, and the
// assistant messages after it say how far the script has got. So a
// retried request gets the same reply, and a resumed conversation
// picks up where its history says it is. Requests that offer no tools
// (titles, summaries and other side calls the CLI makes) get a short
// text reply and do not advance anything.
//
// # Nothing beyond loopback
//
// The server is also an HTTP proxy that refuses everything: a client
// given HTTPS_PROXY pointing at it (and NO_PROXY for 127.0.0.1) sends
// any request meant for another host here, where it is refused and
// recorded (Stray), instead of reaching the network.
package anthropicapi
