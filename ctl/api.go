package ctl

import (
	"encoding/json"
	"fmt"
	"strconv"
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
	// Agent names the processes that are the turn's agent. Absent or
	// empty: the mount's default (cowfs mount --agent-*; cowfs run: its
	// command), and without one every process.
	Agent *AgentScope `json:"agent,omitempty"`
}

// AgentScope names the processes that are a turn's agent: a process is
// the agent's if any entry holds it. A change any other process makes
// during the turn (a person's editor, another tool) is journaled but is
// not the turn's: it is marked "agent": false, and rollbacks never undo
// it and treat the turn's changes to the same paths as conflicts, as
// they treat changes made outside turns (unless forced).
type AgentScope struct {
	// Uids: processes whose filesystem uid is one of these.
	Uids []uint32 `json:"uids,omitempty"`
	// Pids: these processes and every process descended from them from
	// the turn's begin on (also one re-parented away, such as a daemon
	// that double-forked). Each must be running when the turn begins.
	Pids []uint32 `json:"pids,omitempty"`
	// Cgroups: processes in these cgroup v2 cgroups or beneath them; a
	// path as /proc/PID/cgroup gives it (/system.slice/x.scope), or the
	// same under the cgroup2 mount (/sys/fs/cgroup/system.slice/x.scope).
	// Each must exist when the turn begins.
	Cgroups []string `json:"cgroups,omitempty"`
}

// NotAgent is the value of an "agent" field that marks a change as not
// the turn's agent's.
func NotAgent() *bool {
	f := false
	return &f
}

// Turn describes one turn.
type Turn struct {
	Num    uint64 `json:"num"`              // 1, 2, 3 … never reused
	ID     string `json:"id,omitempty"`     // the harness's id
	Anchor string `json:"anchor,omitempty"` // the conversation anchor
	State  string `json:"state"`            // "open", "closed" or "reverted"

	BeganAt time.Time  `json:"began_at"`
	EndedAt *time.Time `json:"ended_at,omitempty"`

	ChangedPaths int   `json:"changed_paths"` // paths with a net change by the turn's agent
	Records      int   `json:"records"`       // journal records
	JournalBytes int64 `json:"journal_bytes"` // bytes the turn added to the journal
	// NotAgentPaths counts the paths processes outside the turn's agent
	// scope changed during it: not the turn's changes.
	NotAgentPaths int `json:"not_agent_paths,omitempty"`
	// Agent is the turn's agent scope, absent if every process is its
	// agent.
	Agent *AgentScope `json:"agent,omitempty"`
}

// Resources are what the daemon process holds.
type Resources struct {
	Goroutines  int   `json:"goroutines"`
	OpenFiles   int   `json:"open_files"` // descriptors
	RSSBytes    int64 `json:"rss_bytes"`
	MaxRSSBytes int64 `json:"max_rss_bytes"` // the peak since it started
}

// Turn states.
const (
	StateOpen   = "open"
	StateClosed = "closed"
	// A reverted turn was rolled back; it is forgotten when the next
	// turn begins, unless the rollback is unreverted first.
	StateReverted = "reverted"
)

// TurnList is the body of GET /v1/turns.
type TurnList struct {
	Turns []Turn `json:"turns"` // oldest first
	// OutsideTurns counts paths changed through the mount while no turn
	// was open, in the window.
	OutsideTurns int `json:"outside_turns"`
	// PrunedEarly: as in Status.
	PrunedEarly *PrunedEarly `json:"pruned_early,omitempty"`
}

// Change is the net effect of a turn on one path.
type Change struct {
	Path Path `json:"path"` // relative to the workspace root
	// Kind is "created", "modified" (content changed, or the file was
	// replaced), "deleted", "renamed" (now at path, was at from) or
	// "metadata" (mode, owner, times or xattrs only).
	Kind string `json:"kind"`
	From Path   `json:"from,omitempty"`
	// Type is "file", "dir", "symlink", "fifo", "socket", "char" or
	// "block".
	Type string `json:"type"`
	// Bytes is the size of the pre-image journaled or kept aside for
	// the path: what a rollback would put back.
	Bytes int64 `json:"bytes"`
	// Who made the first change: pid, uid and command name
	// (/proc/PID/comm) of the calling process.
	Pid     uint32 `json:"pid"`
	Uid     uint32 `json:"uid"`
	Command string `json:"command"`
	// CommandLine is that process's command line (/proc/PID/cmdline):
	// arguments joined by spaces, control and other non-printable
	// characters and bytes that are not UTF-8 escaped as \xNN, at most
	// 256 bytes, ending in "…" if cut. Absent if it could not be read
	// (a process gone), or the change was journaled before cowfs kept
	// command lines.
	CommandLine string    `json:"command_line,omitempty"`
	Time        time.Time `json:"time"`
	// Step is the step (tool call) the first change was made in.
	Step string `json:"step,omitempty"`
	// Outside: (some of) the change was made outside the mount (by the
	// host side of a sandbox, another mount namespace, or while cowfs
	// was not running) and found at a turn boundary, a rollback or
	// start-up. What it destroyed is unknown: a rollback leaves the path
	// alone and reports it, unless forced.
	Outside bool `json:"outside,omitempty"`
	// Agent is false for a change made by processes outside the turn's
	// agent scope (pid, uid and command are theirs): not the turn's, a
	// rollback leaves it and reports the turn's changes to the path as
	// conflicts, unless forced. A turn lists such a change apart from
	// the agent's change to the same path. Absent: the agent's.
	Agent *bool `json:"agent,omitempty"`
}

// ByAgent reports whether the change is the turn's agent's.
func (c Change) ByAgent() bool { return c.Agent == nil || *c.Agent }

// TurnDetail is the body of GET /v1/turns/{ref}.
type TurnDetail struct {
	Turn
	Changes []Change `json:"changes"` // sorted by path
}

// Step is one step (tool call) of a turn and what it changed.
type Step struct {
	// ID is the step's id (StepRequest.ID); "" for the changes made in
	// the turn before its first step.
	ID   string `json:"id"`
	Name string `json:"name,omitempty"` // StepRequest.Name
	// BeganAt is when the step began (absent for ID "").
	BeganAt *time.Time `json:"began_at,omitempty"`
	// ChangedPaths and NotAgentPaths count Changes as a turn does.
	ChangedPaths  int `json:"changed_paths"`
	NotAgentPaths int `json:"not_agent_paths,omitempty"`
	// Changes are the step's own net changes, sorted by path, as a
	// turn's (Change.Agent false for others'): a path two steps
	// changed is listed under each.
	Changes []Change `json:"changes"`
}

// StepList is the body of GET /v1/turns/{ref}/steps.
type StepList struct {
	Turn uint64 `json:"turn"`
	// Steps in the order they began; a step id begun twice is listed
	// once, where it first began, with all its changes.
	Steps []Step `json:"steps"`
}

// OutsideChanges is the body of GET /v1/outside: the changes made in
// the window while no turn was open (TurnList.OutsideTurns counts
// them), one per path, folded as a turn's. Pid, uid and command are
// those of the process that made the first of them; a change found
// outside the mount has none (Outside).
type OutsideChanges struct {
	Changes []Change `json:"changes"` // sorted by path
}

// Status is the body of GET /v1/status.
type Status struct {
	Version    string `json:"version"`
	Workspace  string `json:"workspace"`  // the backing directory
	Mountpoint string `json:"mountpoint"` // where the view is mounted
	Journal    string `json:"journal"`    // journal directory
	Socket     string `json:"socket"`
	// Listen is the https://HOST:PORT the API is also served at over
	// mutual TLS (--listen), its port resolved; absent without one.
	Listen    string    `json:"listen,omitempty"`
	Pid       int       `json:"pid"` // the daemon's
	StartedAt time.Time `json:"started_at"`
	Window    int       `json:"window"` // turns kept
	Sync      bool      `json:"sync"`   // commits fsynced

	OpenTurn   *Turn  `json:"open_turn,omitempty"`
	Turns      int    `json:"turns"`                 // in the window
	OldestTurn uint64 `json:"oldest_turn,omitempty"` // reachable range
	LatestTurn uint64 `json:"latest_turn,omitempty"`

	JournalBytes int64 `json:"journal_bytes"` // on disk
	// ContentBytes is the compressed content the window's records
	// need; the journal takes about this plus Badger's files.
	ContentBytes int64 `json:"content_bytes"`
	FreeBytes    int64 `json:"free_bytes"` // free on the journal's filesystem
	// MaxJournalBytes is the size bound (--max-journal-size); 0: none.
	MaxJournalBytes int64 `json:"max_journal_bytes"`
	// PrunedEarly, if turns left the window early since the oldest
	// turn in it began: when, up to which turn, and why.
	PrunedEarly *PrunedEarly `json:"pruned_early,omitempty"`
	// JournalError says why the journal became unusable (its directory
	// deleted, its filesystem read-only): changes that need a record
	// fail with EIO until the daemon is restarted on a usable journal.
	JournalError string `json:"journal_error,omitempty"`
	// Unrevertable counts the rollbacks since the last turn began; the
	// latest can be unreverted.
	Unrevertable int `json:"unrevertable"`
	// The daemon's own resources, to watch for leaks and bound memory.
	Resources Resources `json:"resources"`
	// FullScan says why the latest rescan (at start-up or a turn or
	// step boundary) stat'ed every tracked path to find changes that
	// bypassed the mount: "nothing was watching" (the first scan), "not
	// watching" (--no-fanotify, or fanotify unavailable), "the kernel's
	// event queue overflowed", …; absent when it stat'ed only what the
	// kernel reported changed.
	FullScan string `json:"full_scan,omitempty"`
	// FUSERequests counts the FUSE requests the mount has served since
	// it started, by operation ("LOOKUP", "WRITE", ...); operations
	// never served are left out. For measuring round trips.
	FUSERequests map[string]uint64 `json:"fuse_requests,omitempty"`
}

// TurnRef names a turn by number or by the harness's id. In JSON it is
// a number or a string. A string of decimal digits is a number too
// ("07" is turn 7); a string that reads as a number in any other way
// ("-1", "0x10", "1e3", one past 64 bits) names no turn and is refused,
// as ids never read as numbers (the daemon checks strings: journal
// turnref.go). A JSON number must be a whole number from 0 to 2^64-1
// written without fraction or exponent.
type TurnRef string

func (r *TurnRef) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*r = TurnRef(s)
		return nil
	}
	var n uint64
	if err := json.Unmarshal(b, &n); err != nil {
		var num json.Number
		if json.Unmarshal(b, &num) == nil {
			return fmt.Errorf("not a turn number: %s (turns are numbered 1, 2, 3 …)", b)
		}
		return fmt.Errorf("a turn is a number or an id string, not %s", b)
	}
	*r = TurnRef(strconv.FormatUint(n, 10))
	return nil
}

// RollbackRequest is the body of POST /v1/rollback.
type RollbackRequest struct {
	// To is the turn to roll back to before: the workspace returns to
	// its state when that turn began.
	To TurnRef `json:"to"`
	// DryRun returns the plan and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Force also restores paths changed outside turns since To began,
	// or during them by processes outside their agent scope, which are
	// otherwise skipped and reported.
	Force bool `json:"force,omitempty"`
}

// UnrevertRequest is the body of POST /v1/unrevert.
type UnrevertRequest struct {
	// Force also undoes the rollback on paths changed since it.
	Force bool `json:"force,omitempty"`
}

// Rollback actions for a path.
const (
	ActionRestore = "restore" // exists before and after; content or metadata put back
	ActionRecover = "recover" // deleted or renamed away; brought back
	ActionDelete  = "delete"  // did not exist when the target turn began; removed
	ActionSkip    = "skip"    // left as it is; reason says why
)

// PathAction is what a rollback does (or, dry, would do) to one path.
type PathAction struct {
	Path   Path   `json:"path"`
	Action string `json:"action"`
	Type   string `json:"type"` // as in Change
	Reason string `json:"reason,omitempty"`
	// A rename undone: the object recovered at path comes from another
	// path, or the object deleted from path moves to another.
	From Path `json:"from,omitempty"`
	To   Path `json:"to,omitempty"`
	// Note tells what else happened to a path the rollback restored: a
	// process wrote to it through a shared mapping during the rollback,
	// and the kernel's writeback of that page, which also carried bytes
	// cached before the restore, was refused (the writer got EIO).
	Note string `json:"note,omitempty"`
	// Retried: an earlier rollback skipped changes to this path (a
	// conflict, a failure) and this one, the cause gone, undid them.
	Retried bool `json:"retried,omitempty"`
}

// RollbackCounts sums a rollback's paths: files (and every other
// non-directory) by action, and directories removed and recreated. A
// rename undone counts once, as recovered.
type RollbackCounts struct {
	Restored      int `json:"restored"`
	Recovered     int `json:"recovered"`
	Deleted       int `json:"deleted"`
	Skipped       int `json:"skipped"`
	DirsRemoved   int `json:"dirs_removed"`
	DirsRecreated int `json:"dirs_recreated"`
}

// RollbackResult is the body of a rollback's or an unrevert's reply.
type RollbackResult struct {
	// Target is the turn rolled back to before (for an unrevert: the
	// turn the undone rollback went back to).
	Target   uint64 `json:"target"`
	DryRun   bool   `json:"dry_run,omitempty"`
	Unrevert bool   `json:"unrevert,omitempty"`
	// Rollback is the rollback's id (absent in a dry run).
	Rollback uint64         `json:"rollback,omitempty"`
	Paths    []PathAction   `json:"paths"` // sorted by path
	Counts   RollbackCounts `json:"counts"`
	// Marker is the conversation truncation marker the rollback left
	// (absent in a dry run and an unrevert, which withdraws it).
	Marker *Marker `json:"marker,omitempty"`
	// Complete is false for a partial rollback: a step failed for a
	// reason other than a conflict (no space, an I/O error; Failure
	// says which). It left no marker and reverted no turn; the paths it
	// did not finish are skipped with the reason. Retrying the same
	// rollback once the cause is gone finishes it; an unrevert undoes
	// what it did. Until then, beginning a turn or another rollback is
	// refused (busy).
	Complete bool   `json:"complete"`
	Failure  string `json:"failure,omitempty"`
}

// Marker tells the harness where to truncate its conversation after a
// rollback: at Anchor, the anchor of the turn rolled back to before.
type Marker struct {
	Turn      uint64    `json:"turn"`
	ID        string    `json:"id,omitempty"`
	Anchor    string    `json:"anchor,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Note is a line of at most 160 characters for the model: later
	// messages were removed and the files restored; continue without
	// mentioning it.
	Note string `json:"note"`
	// Replaces are the markers this one superseded, oldest turn first:
	// those that stood at or after its turn when its rollback was made.
	// The conversation from its anchor on is cut, their notes with it;
	// one marker stands per conversation point. An unrevert of its
	// rollback puts them back. Their own replaces are left out.
	Replaces []Marker `json:"replaces,omitempty"`
}

// MarkerList is the body of GET /v1/markers.
type MarkerList struct {
	Markers []Marker `json:"markers"` // oldest turn first
}

// Error is the body of every error response, as {"error": Error}.
type Error struct {
	// Code is one of the Code* constants.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Oldest and Latest, in an out_of_window error, are the turns a
	// rollback can reach: the oldest and the latest in the window. A
	// client reads them here rather than from Message, whose words may
	// change.
	Oldest uint64 `json:"oldest,omitempty"`
	Latest uint64 `json:"latest,omitempty"`
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

// StepRequest is the body of POST /v1/turns/current/steps: a step (a tool
// call) of the open turn begins. Changes until the next step, or the end
// of the turn, carry its id.
type StepRequest struct {
	ID string `json:"id"` // the harness's tool-call id
	// Name is what the step is, for people reading the turn: the
	// tool's name ("Bash", "Edit"). Optional; at most MaxIDBytes.
	Name string `json:"name,omitempty"`
}

// StepStarted is the reply to a StepRequest.
type StepStarted struct {
	Turn uint64 `json:"turn"`
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Event types on GET /v1/events.
const (
	EventChange    = "change"     // a change through the mount
	EventTurnBegin = "turn_begin" // with id, anchor
	EventTurnEnd   = "turn_end"
	EventStep      = "step" // a step began: its id is in step, its name in name
	EventRollback  = "rollback"
	EventUnrevert  = "unrevert"
	// EventTurnPruned says a turn left the window: turn and id name it,
	// reason says why (PrunedWindow, PrunedMaxSize, PrunedDiskFull).
	EventTurnPruned = "turn_pruned"
	// EventGap says events before seq have left the window: a client
	// asked for them with ?since but they are gone.
	EventGap = "gap"
	// EventJournalError says the journal became unusable (message says
	// why); it ends a followed stream.
	EventJournalError = "journal_error"
)

// Why a turn left the window (turn_pruned events, PrunedEarly).
const (
	PrunedWindow   = "window"           // the window's newer turns filled it
	PrunedMaxSize  = "max_journal_size" // the journal reached --max-journal-size
	PrunedDiskFull = "disk_full"        // the journal's filesystem was full
)

// PrunedEarly says when turns last left the window before their time.
type PrunedEarly struct {
	Through uint64    `json:"through"` // the newest turn that left
	Reason  string    `json:"reason"`  // PrunedMaxSize or PrunedDiskFull
	Time    time.Time `json:"time"`
}

// Kinds of change events. Changes through the mount are created,
// modified, deleted, moved (one event: from, then path) or metadata;
// the paths a rollback or an unrevert changes are restored, recovered,
// deleted or moved, with the rollback's id and no process. (A turn's
// net changes, Change.Kind, say "renamed" where events say "moved".)
const (
	KindCreated   = "created"
	KindModified  = "modified"
	KindDeleted   = "deleted"
	KindMoved     = "moved"
	KindMetadata  = "metadata"
	KindRestored  = "restored"
	KindRecovered = "recovered"
)

// Event is one line of GET /v1/events.
type Event struct {
	// Seq orders events; pass the last one seen as ?since= to resume.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	Turn uint64    `json:"turn,omitempty"` // 0: outside a turn
	Step string    `json:"step,omitempty"`

	// change: the path, what happened to it (a Kind* constant; moved
	// with from), the pre-image bytes journaled, and the process that
	// did it — or, for a path a rollback or an unrevert changed, that
	// rollback's id (Rollback) and no process.
	Path    Path   `json:"path,omitempty"`
	Kind    string `json:"kind,omitempty"`
	From    Path   `json:"from,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	Pid     uint32 `json:"pid,omitempty"`
	Uid     uint32 `json:"uid,omitempty"`
	Command string `json:"command,omitempty"`
	// CommandLine: as in Change.
	CommandLine string `json:"command_line,omitempty"`
	// Outside: found changed outside the mount (no pid, uid, command).
	Outside bool `json:"outside,omitempty"`
	// Agent is false for a change made during a turn by a process
	// outside the turn's agent scope (see Change.Agent).
	Agent *bool `json:"agent,omitempty"`

	// turn_begin; turn_pruned (id).
	ID     string `json:"id,omitempty"`
	Anchor string `json:"anchor,omitempty"`

	// step: the step's name, if it was given one.
	Name string `json:"name,omitempty"`

	// turn_pruned.
	Reason string `json:"reason,omitempty"`

	// rollback, unrevert (and Rollback in their per-path changes).
	Rollback uint64          `json:"rollback,omitempty"`
	Target   uint64          `json:"target,omitempty"`
	Counts   *RollbackCounts `json:"counts,omitempty"`
	Marker   *Marker         `json:"marker,omitempty"`
	// A partial rollback: what failed (see RollbackResult).
	Failure string `json:"failure,omitempty"`

	// journal_error.
	Message string `json:"message,omitempty"`
}

// DiffRequest is the query of GET /v1/diff.
type DiffRequest struct {
	From TurnRef // the turn whose start the diff starts at
	// To is where it ends: "" for the end of From (what From changed),
	// a later turn (its start) or "now".
	To   string
	Step string // only what this step of From changed
	Stat bool   // counts only, no diff text
}

// DiffFile is one changed file in a diff.
type DiffFile struct {
	Path Path `json:"path"`
	From Path `json:"from,omitempty"` // renamed: the old path
	// Status is created, modified, deleted, renamed or metadata.
	Status   string `json:"status"`
	Binary   bool   `json:"binary,omitempty"`    // named, not diffed
	TooLarge bool   `json:"too_large,omitempty"` // over MaxDiffBytes: named, not diffed
	Added    int    `json:"added"`               // lines
	Removed  int    `json:"removed"`
	// Diff is the unified diff (absent with stat, or for binary, too
	// large, metadata-only and non-regular files).
	Diff string `json:"diff,omitempty"`
	// Note says why there is no diff of a changed path (a symlink's
	// target, a directory).
	Note string `json:"note,omitempty"`
	// Agent is false if (some of) the change was made during a turn by
	// a process outside the turn's agent scope (see Change.Agent).
	Agent *bool `json:"agent,omitempty"`
}

// MaxDiffBytes is the largest file version a diff shows.
const MaxDiffBytes = 1 << 20

// Diff is the body of GET /v1/diff.
type Diff struct {
	From  string     `json:"from"` // "turn 3", "turn 3 step call_1"
	To    string     `json:"to"`   // "end of turn 3", "turn 5", "now"
	Files []DiffFile `json:"files"`
}

// Purged is the body of DELETE /v1/journal: what the daemon removed
// after it stopped — the workspace's private directory (with the aside
// area), its journal and its state directory — in that order.
type Purged struct {
	Removed []string `json:"removed"`
}
