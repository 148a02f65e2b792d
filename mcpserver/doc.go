// Package mcpserver is cowfs's Model Context Protocol server: the tools
// an agent (or the person steering it) calls to see what its turns did
// to the workspace and to roll them back, served over stdio by
// `cowfs mcp` with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// # What it is made of
//
// Every tool is one or a few calls to the workspace's daemon through
// ctl's Go client, the same calls the CLI makes; the server keeps no
// state of the workspace and never touches the journal or the files
// itself. How to reach the daemon is the caller's (Options.Dial): cmd
// cowfs dials the daemon's socket, or, when none serves the workspace,
// opens its journal for the length of one call as the CLI's offline
// commands do. Each tool answers with a typed result (structured
// content: the control socket's JSON where there is one, docs/api.md)
// and the same facts as readable text for the model. An error the
// daemon returns is a tool error (IsError) carrying the daemon's code
// and message, never a protocol failure, so the model reads it and can
// act on it.
//
// # Tools
//
// Read-only (annotated readOnlyHint): log, show (a turn's paths grouped
// by the step, the tool call, that first changed them), diff (of a
// turn, a step, or a turn to now; a paths filter; a bounded text),
// cat (a file as it was when a turn began), markers, rollback_preview
// and unrevert_preview. Destructive (destructiveHint): rollback, undo,
// unrevert.
//
// # Not rolling back blind
//
// A model must not roll a workspace back on a guess. Each destructive
// tool therefore
//
//   - refuses while a turn is open, as the daemon does, saying which
//     turn and how to end it (a rollback then would undo the work in
//     progress under whoever is doing it);
//   - needs either the token of a preview (rollback_preview,
//     unrevert_preview) or an explicit confirm argument, the caller's
//     word that it means to act without one.
//
// The daemon's dry run returns a plan but no id for it, so the token is
// made here: an HMAC, under a key drawn when the server starts, of what
// the preview showed — for a rollback its kind, target turn, force
// flag and the whole plan (every path's action and reason, the
// counts); for an unrevert the state it would undo (how many rollbacks
// stand, each turn's state, the markers). A token cannot be made up,
// and one from an earlier server process does not verify. To act on a
// token the tool previews again and computes the token of what it sees
// now: if the plan changed since the model read it (a turn ran, a path
// changed, another rollback went first) the token differs and the tool
// refuses, saying to preview again. Between that second preview and the
// rollback itself the daemon plans anew, so a change in that short
// window is handled as any rollback handles it: conflicts skipped and
// reported.
//
// Imports: ctl (and, through it, privdir) only; nothing else of cowfs.
package mcpserver
