// Package geminiapi is a scripted mock of the Gemini API, enough of it
// for the real Gemini CLI (@google/gemini-cli) to run against on
// 127.0.0.1: the CLI reads its base URL from GOOGLE_GEMINI_BASE_URL
// and its key from GEMINI_API_KEY, and then calls
//
//   - models/M:streamGenerateContent?alt=sse for the agent's own turns
//     (answered with one SSE event holding the whole candidate),
//   - models/M:generateContent for its side questions that want JSON
//     (the model router's complexity score, the next-speaker check),
//   - models/M:countTokens.
//
// The agent's turns come from a Script: for the latest user prompt that
// holds one of its keys, the model's Nth reply is the Nth list of
// function calls (run_shell_command, write_file, replace, ...), and
// after the last one a short text that ends the turn. The script is
// keyed by the prompt, not by the order of requests, so a retried
// request gets the same answer and the history the CLI sends decides
// where the conversation is.
//
// Every request is kept (Requests) so a test can check what reached the
// model, such as the note a hook added to a prompt.
package geminiapi
