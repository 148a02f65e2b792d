package hook

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

// Daemon is what the turn logic asks of a cowfs daemon: *ctl.Client
// has these methods.
type Daemon interface {
	Status(ctx context.Context) (ctl.Status, error)
	BeginTurn(ctx context.Context, req ctl.BeginTurnRequest) (ctl.Turn, error)
	EndTurn(ctx context.Context) (ctl.Turn, error)
	BeginStep(ctx context.Context, req ctl.StepRequest) (ctl.StepStarted, error)
	Markers(ctx context.Context) (ctl.MarkerList, error)
}

var _ Daemon = (*ctl.Client)(nil)

// ErrForeignTurn: a turn is open that this agent's hooks did not begin.
// Errors that wrap it are *ForeignTurnError.
var ErrForeignTurn = errors.New("a turn the hooks did not begin is open")

// ForeignTurnError names the open turn.
type ForeignTurnError struct{ Turn ctl.Turn }

func (e *ForeignTurnError) Error() string {
	id := ""
	if e.Turn.ID != "" {
		id = fmt.Sprintf(" (id %q)", e.Turn.ID)
	}
	return fmt.Sprintf("turn %d%s is open and was not begun by these hooks; end it with 'cowfs turn end' (or let whoever began it end it), then send the prompt again", e.Turn.Num, id)
}

// Is makes errors.Is(err, ErrForeignTurn) true.
func (e *ForeignTurnError) Is(target error) bool { return target == ErrForeignTurn }

// Turns is the turn logic of one agent's hooks on one workspace.
type Turns struct {
	Daemon Daemon
	// Prefix starts the id of every turn these hooks begin ("cc-"): an
	// open turn with it is theirs, stale if a new prompt comes.
	Prefix string
	// Delivered is the file that remembers which markers' notes were
	// handed to the agent; empty: none is remembered, so each note is
	// handed on every prompt while its marker stands.
	Delivered string
}

// Begun is what Begin did.
type Begun struct {
	Turn ctl.Turn
	// Ended is the stale turn Begin ended first, if any.
	Ended *ctl.Turn
	// Notes are the notes of the markers left since the last prompt,
	// oldest turn first, for the agent's model.
	Notes []string
	// Warning says what went wrong without stopping the turn (the
	// delivered markers could not be recorded).
	Warning string
}

// Begin begins the turn req names, ending a stale turn of these hooks
// first. If the turn req names is already open (the hook ran twice for
// one prompt), it is kept. An id already used by a closed turn gets a
// suffix.
func (t Turns) Begin(ctx context.Context, req ctl.BeginTurnRequest) (Begun, error) {
	var b Begun
	st, err := t.Daemon.Status(ctx)
	if err != nil {
		return b, err
	}
	pending, standing, err := t.undelivered(ctx)
	if err != nil {
		return b, err
	}
	switch open := st.OpenTurn; {
	case open != nil && req.ID != "" && open.ID == req.ID:
		b.Turn = *open
	case open != nil && strings.HasPrefix(open.ID, t.Prefix):
		ended, err := t.Daemon.EndTurn(ctx)
		if err != nil && !errors.Is(err, &ctl.Error{Code: ctl.CodeConflict}) {
			return b, fmt.Errorf("ending the stale turn %d: %w", open.Num, err)
		}
		if err == nil {
			b.Ended = &ended
		}
		fallthrough
	case open == nil:
		b.Turn, err = t.Daemon.BeginTurn(ctx, req)
		if errors.Is(err, &ctl.Error{Code: ctl.CodeConflict}) && req.ID != "" {
			// The id is taken by a closed turn: the CLI sent the same
			// prompt id again. Another id keeps both apart.
			req.ID += "-" + strconv.FormatInt(time.Now().UnixNano()%(1<<30), 36)
			b.Turn, err = t.Daemon.BeginTurn(ctx, req)
		}
		if err != nil {
			return b, err
		}
	default:
		return b, &ForeignTurnError{Turn: *open}
	}
	for _, m := range pending {
		b.Notes = append(b.Notes, m.Note)
	}
	if len(pending) > 0 {
		if err := t.remember(standing); err != nil {
			b.Warning = err.Error()
		}
	}
	return b, nil
}

// ErrNoTurn: no turn is open for a step or an end.
var ErrNoTurn = errors.New("no turn is open")

// Step begins the step id of the open turn, named after its tool;
// ErrNoTurn if none is open. A tool name that is not a short printable
// label is left out rather than failing the step.
func (t Turns) Step(ctx context.Context, id, tool string) (ctl.StepStarted, error) {
	if !printableLabel(tool) {
		tool = ""
	}
	st, err := t.Daemon.BeginStep(ctx, ctl.StepRequest{ID: id, Name: tool})
	if errors.Is(err, &ctl.Error{Code: ctl.CodeConflict}) {
		return st, fmt.Errorf("step %s: %w", id, ErrNoTurn)
	}
	return st, err
}

// End ends the open turn if these hooks began it; ErrNoTurn if none is
// open, ErrForeignTurn if someone else's is: the end of an answer whose
// prompt was blocked (SessionEnd fires all the same) must not end the
// turn a person or a harness holds open.
func (t Turns) End(ctx context.Context) (ctl.Turn, error) {
	st, err := t.Daemon.Status(ctx)
	switch {
	case err != nil:
		return ctl.Turn{}, err
	case st.OpenTurn == nil:
		return ctl.Turn{}, ErrNoTurn
	case !strings.HasPrefix(st.OpenTurn.ID, t.Prefix):
		return ctl.Turn{}, &ForeignTurnError{Turn: *st.OpenTurn}
	}
	tn, err := t.Daemon.EndTurn(ctx)
	if errors.Is(err, &ctl.Error{Code: ctl.CodeConflict}) {
		return tn, ErrNoTurn
	}
	return tn, err
}

// Seen records every marker standing now as delivered: integrating a
// workspace with a history does not hand the agent notes of rollbacks
// made before it.
func (t Turns) Seen(ctx context.Context) error {
	_, standing, err := t.undelivered(ctx)
	if err != nil {
		return err
	}
	return t.remember(standing)
}

// undelivered returns the standing markers whose notes were not handed
// on yet, and the keys of all standing markers.
func (t Turns) undelivered(ctx context.Context) ([]ctl.Marker, []string, error) {
	l, err := t.Daemon.Markers(ctx)
	if err != nil {
		return nil, nil, err
	}
	done := readDelivered(t.Delivered)
	var pending []ctl.Marker
	var standing []string
	for _, m := range l.Markers {
		k := markerKey(m)
		standing = append(standing, k)
		if !done[k] {
			pending = append(pending, m)
		}
	}
	return pending, standing, nil
}

// remember records the standing markers as delivered; markers no longer
// standing are forgotten, which keeps the file as small as the list.
func (t Turns) remember(standing []string) error {
	if t.Delivered == "" {
		return nil
	}
	return writeDelivered(t.Delivered, standing)
}

// markerKey names a marker: its turn and when its rollback made it (an
// undo and a new rollback to the same turn make a new marker).
func markerKey(m ctl.Marker) string {
	return strconv.FormatUint(m.Turn, 10) + "@" + strconv.FormatInt(m.CreatedAt.UnixNano(), 10)
}

// NoDaemon is a Daemon that answers every request with err: the hooks
// of a workspace whose daemon cannot even be looked for (a bad -w).
func NoDaemon(err error) Daemon { return noDaemon{err} }

type noDaemon struct{ err error }

func (n noDaemon) Status(context.Context) (ctl.Status, error) { return ctl.Status{}, n.err }
func (n noDaemon) BeginTurn(context.Context, ctl.BeginTurnRequest) (ctl.Turn, error) {
	return ctl.Turn{}, n.err
}
func (n noDaemon) EndTurn(context.Context) (ctl.Turn, error) { return ctl.Turn{}, n.err }
func (n noDaemon) BeginStep(context.Context, ctl.StepRequest) (ctl.StepStarted, error) {
	return ctl.StepStarted{}, n.err
}
func (n noDaemon) Markers(context.Context) (ctl.MarkerList, error) { return ctl.MarkerList{}, n.err }

// refusal says why a prompt is refused when its turn could not begin
// (err, from Begin), and what to do: mount the workspace, end the turn
// someone else left open, or look at the daemon. cowfs is the binary's
// path and agent the AGENT of 'cowfs integrate AGENT', for the commands
// it names.
func refusal(err error, cowfs, ws, agent string) string {
	qcowfs, qws := human.ShellWord(cowfs), human.ShellWord(ws)
	switch {
	case errors.Is(err, ctl.ErrNotRunning):
		return fmt.Sprintf("no cowfs daemon serves the workspace %s, so this prompt's changes could not be rolled back. Mount it first: %s mount -d %s (or take the hooks out: %s -w %s integrate %s --remove).",
			ws, qcowfs, qws, qcowfs, qws, agent)
	case errors.Is(err, ErrForeignTurn):
		return err.Error() + "."
	default:
		return fmt.Sprintf("no turn could begin: %v. See '%s -w %s status'.", err, qcowfs, qws)
	}
}
