package ctl

import (
	"fmt"
	"time"
)

// The wire types of the control socket, version 1. docs/api.md is the
// contract; every field here is documented there too.

// BeginTurnRequest is the body of POST /v1/turns.
type BeginTurnRequest struct {
	// ID is the harness's own id for the turn, unique in the window. It
	// may not be a number (numbers name turns by position).
	ID string `json:"id,omitempty"`
	// Anchor ties the turn to the conversation, e.g. the id of the user
	// message that started it. A rollback's marker returns it.
	Anchor string `json:"anchor,omitempty"`
}

// Turn describes one turn.
type Turn struct {
	Num    uint64 `json:"num"`              // 1, 2, 3 … never reused
	ID     string `json:"id,omitempty"`     // the harness's id
	Anchor string `json:"anchor,omitempty"` // the conversation anchor
	State  string `json:"state"`            // "open" or "closed"

	BeganAt time.Time  `json:"began_at"`
	EndedAt *time.Time `json:"ended_at,omitempty"`

	ChangedPaths int   `json:"changed_paths"` // paths with a net change
	Records      int   `json:"records"`       // journal records
	JournalBytes int64 `json:"journal_bytes"` // bytes the turn added to the journal
}

// Turn states.
const (
	StateOpen   = "open"
	StateClosed = "closed"
)

// TurnList is the body of GET /v1/turns.
type TurnList struct {
	Turns []Turn `json:"turns"` // oldest first
	// OutsideTurns counts paths changed through the mount while no turn
	// was open, in the window.
	OutsideTurns int `json:"outside_turns"`
}

// Change is the net effect of a turn on one path.
type Change struct {
	Path string `json:"path"` // relative to the workspace root
	// Kind is "created", "modified" (content changed, or the file was
	// replaced), "deleted", "renamed" (now at path, was at from) or
	// "metadata" (mode, owner, times or xattrs only).
	Kind string `json:"kind"`
	From string `json:"from,omitempty"`
	// Type is "file", "dir", "symlink", "fifo", "socket", "char" or
	// "block".
	Type string `json:"type"`
	// Bytes is the size of the pre-image journaled or kept aside for
	// the path: what a rollback would put back.
	Bytes int64 `json:"bytes"`
	// Who made the first change: pid, uid and command name
	// (/proc/PID/comm) of the calling process.
	Pid     uint32    `json:"pid"`
	Uid     uint32    `json:"uid"`
	Command string    `json:"command"`
	Time    time.Time `json:"time"`
}

// TurnDetail is the body of GET /v1/turns/{ref}.
type TurnDetail struct {
	Turn
	Changes []Change `json:"changes"` // sorted by path
}

// Status is the body of GET /v1/status.
type Status struct {
	Version    string    `json:"version"`
	Workspace  string    `json:"workspace"`  // the backing directory
	Mountpoint string    `json:"mountpoint"` // where the view is mounted
	Journal    string    `json:"journal"`    // journal directory
	Socket     string    `json:"socket"`
	Pid        int       `json:"pid"` // the daemon's
	StartedAt  time.Time `json:"started_at"`
	Window     int       `json:"window"` // turns kept
	Sync       bool      `json:"sync"`   // commits fsynced

	OpenTurn   *Turn  `json:"open_turn,omitempty"`
	Turns      int    `json:"turns"`                 // in the window
	OldestTurn uint64 `json:"oldest_turn,omitempty"` // reachable range
	LatestTurn uint64 `json:"latest_turn,omitempty"`

	JournalBytes int64 `json:"journal_bytes"` // on disk
}

// Error is the body of every error response, as {"error": Error}.
type Error struct {
	// Code is one of the Code* constants.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes.
const (
	CodeBadRequest  = "bad_request"   // malformed request, bad parameter
	CodeNotFound    = "not_found"     // no such turn, path, endpoint
	CodeBusy        = "busy"          // a turn is open, or another rollback runs
	CodeOutOfWindow = "out_of_window" // the turn has left the window
	CodeConflict    = "conflict"      // the request contradicts the state (no open turn, duplicate id)
	CodeForbidden   = "forbidden"     // the peer's uid may not use this socket
	CodeInternal    = "internal"      // cowfs failed; see the daemon's log
)

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is(err, &Error{Code: c}) match any error with code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

type errorBody struct {
	Error *Error `json:"error"`
}
