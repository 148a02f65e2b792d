// Package hook puts cowfs under agent CLIs that offer hooks (Claude
// Code, Gemini CLI): small commands the CLI runs at points of its loop,
// with a JSON description of the moment on standard input. `cowfs hook
// AGENT EVENT` is one such command; this package is what it does, and
// what `cowfs integrate AGENT` writes into the CLI's settings.
//
// # Turns from hooks
//
// The CLI's loop maps onto cowfs's turns: a user prompt begins a turn,
// each tool call begins a step (its tool-call id), and the end of the
// answer ends the turn. The agent-neutral part is Turns (turns.go):
//
//   - Begin ends a stale open turn first: one this agent's hooks began
//     (its id has the agent's prefix) whose end never came, because the
//     CLI was interrupted (Claude Code skips Stop on SIGINT) or killed.
//     A turn someone else opened (a harness, a person's `cowfs turn
//     begin`) is not ended: Begin refuses, naming `cowfs turn end`.
//   - Step and End do nothing, and say so, when no turn is open: a hook
//     must never break the agent it serves.
//   - Begin also returns the notes of the markers rollbacks left since
//     the last prompt, each once: the CLI hands them to the model, so it
//     knows the files went back. Which markers were delivered is
//     remembered in a small file in the workspace's cowfs state
//     directory (never in the workspace, whose changes would be
//     journaled in the turn).
//
// # Claude Code
//
// claude*.go: the hook JSON Claude Code sends (claude.go), the turn id
// and anchor taken from it (claude_anchor.go), the session transcript
// read for where to resume after a rollback (claude_transcript.go). The
// hooks are merged into and taken out of .claude/settings.json by
// Settings (settings.go, keeping the person's key order: jsonobject.go),
// which serves Gemini CLI's file of the same shape too.
//
// The turn id is "cc-" and the first 8 hex digits of prompt_id: short
// enough for `cowfs log`, unique in any window. The anchor is
// "SESSION/PROMPT", session_id and prompt_id: it names the prompt, as a
// harness's anchor names the user message where the conversation is cut.
// Claude Code writes the prompt to its transcript only after the hook
// returns, so where to resume is looked up when a rollback needs it
// (ClaudeResumePoint): the transcript entry before the prompt's own, its
// parentUuid. `claude --resume SESSION --resume-session-at UUID` keeps
// the conversation up to that entry and drops the prompt and all after
// it: exactly what a rollback to before the turn drops of the files. The
// first prompt of a session has nothing before it: going back before it
// means a new session.
//
// The turn's agent is the Claude Code process (the nearest ancestor of
// the hook that is not a shell) and its descendants, so a person
// editing in the workspace meanwhile is not the agent.
//
// # Gemini CLI
//
// gemini*.go, described at the top of gemini.go: Gemini CLI gives hooks
// neither a prompt id nor a tool-call id, so the ids are made from the
// session, the turn's number and the tool's name, and, since it cannot
// resume at a message, a rewind truncates its session file as its own
// /rewind does.
//
// Imports: ctl only.
package hook
