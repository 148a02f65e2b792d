package daemon

import (
	"encoding/json"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

// A rollback or an unrevert changes files too, and a harness that keeps
// a diff pane or a mirror copy from the event stream must hear of each
// one. So besides its summary event (rollback, unrevert) it journals a
// change event per path it touched, derived from its per-path report:
//
//	report action                 event kind
//	restore                       restored   (content or metadata put back)
//	recover                       recovered  (the path exists again)
//	recover with from (a rename   moved      (from: where it was; the
//	undone; its delete half, with              other half is not an event)
//	to, is not an event)
//	delete                        deleted
//	skip                          none: the path was not touched
//
// They carry the rollback's id and no process: cowfs made them. They
// come before the summary, so a client that sees the summary has seen
// every path; turn is 0 (outside a turn), as for the summary.

// eventRollbackPath names the journal event of one path a rollback or an
// unrevert changed; its detail is a pathEvent.
const eventRollbackPath = "rollback_path"

type pathEvent struct {
	Rollback uint64   `json:"rollback"`
	Kind     string   `json:"kind"`
	Path     ctl.Path `json:"path"`
	From     ctl.Path `json:"from,omitempty"`
}

// pathEvents are the per-path events of a rollback's or an unrevert's
// result.
func pathEvents(res ctl.RollbackResult) []any {
	var out []any
	for _, a := range res.Paths {
		e := pathEvent{Rollback: res.Rollback, Path: a.Path}
		switch {
		case a.Action == ctl.ActionSkip, a.To != "":
			continue
		case a.Action == ctl.ActionRecover && a.From != "":
			e.Kind, e.From = ctl.KindMoved, a.From
		case a.Action == ctl.ActionRecover:
			e.Kind = ctl.KindRecovered
		case a.Action == ctl.ActionRestore:
			e.Kind = ctl.KindRestored
		case a.Action == ctl.ActionDelete:
			e.Kind = ctl.KindDeleted
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

// event journals a rollback or an unrevert for the event stream: a
// change event per path it touched, then the summary, its result
// without the per-path list.
func (d *Daemon) event(name string, res ctl.RollbackResult) {
	if err := d.j.AppendEvents(eventRollbackPath, pathEvents(res)); err != nil {
		d.log.Warn("journaling a rollback's events", "rollback", res.Rollback, "err", err)
	}
	res.Paths = nil
	if err := d.j.AppendEvent(name, res); err != nil {
		d.log.Warn("journaling an event", "event", name, "err", err)
	}
}

// pathEventOf is the change event a rollback_path record stands for.
func pathEventOf(r *journal.Record) ctl.Event {
	var p pathEvent
	json.Unmarshal(r.Detail, &p)
	return ctl.Event{Seq: r.Seq, Time: r.Time, Type: ctl.EventChange, Turn: r.Turn,
		Path: p.Path, Kind: p.Kind, From: p.From, Rollback: p.Rollback}
}
