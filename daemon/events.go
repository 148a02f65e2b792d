package daemon

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

func (s *service) BeginStep(ctx context.Context, req ctl.StepRequest) (ctl.StepStarted, error) {
	if s.d.offline {
		return ctl.StepStarted{}, ErrOffline
	}
	t, err := s.d.j.BeginStep(req.ID, req.Name)
	if err != nil {
		return ctl.StepStarted{}, apiError(err)
	}
	s.d.mount.EpochBegan()
	return ctl.StepStarted{Turn: t.Num, ID: req.ID, Name: req.Name}, nil
}

// Events replays the journal's records after since as events, then, to
// follow, waits for more. Records are the single source: a change is
// reported exactly when its record is committed, before the change
// itself reaches the workspace.
func (s *service) Events(ctx context.Context, since uint64, follow bool, emit func(ctl.Event) error) error {
	j := s.d.j
	if ts, err := j.Turns(); err == nil && len(ts) > 0 && since > 0 && since+1 < ts[0].StartSeq {
		gap := ctl.Event{Seq: ts[0].StartSeq - 1, Type: ctl.EventGap}
		if err := emit(gap); err != nil {
			return err
		}
	}
	next := since + 1
	for {
		wake := j.Changed()
		err := j.Scan(next, 0, false, func(r *journal.Record) error {
			next = r.Seq + 1
			if e, ok := eventOf(r); ok {
				return emit(e)
			}
			return nil
		})
		if err != nil && s.stoppingNow() {
			// A purge closes the journal while the socket still
			// answers: the stream ends as every stream does at a stop,
			// and the client's reconnect finds no daemon.
			if follow {
				return nil
			}
			return ctl.Errorf(ctl.CodeBusy, "the daemon is stopping")
		}
		if err != nil || !follow {
			return err
		}
		if err := j.Broken(); err != nil {
			return emit(ctl.Event{Seq: next - 1, Time: time.Now(), Type: ctl.EventJournalError, Message: err.Error()})
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.d.stopping:
			return nil
		case <-wake:
		}
	}
}

// eventOf turns a record into the event a harness sees, if it is one: a
// rollback's own records and a directory's times are not.
func eventOf(r *journal.Record) (ctl.Event, bool) {
	e := ctl.Event{Seq: r.Seq, Time: r.Time, Turn: r.Turn, Step: r.Step, Type: ctl.EventChange,
		Path: ctl.Path(r.Path), Bytes: r.Bytes(), Pid: r.Caller.Pid, Uid: r.Caller.Uid, Command: r.Caller.Comm, CommandLine: r.Caller.Cmdline}
	if r.NotAgent {
		e.Agent = ctl.NotAgent()
	}
	if r.Group != 0 || aside.Private(r.Path) && r.Kind != journal.KindRename {
		return e, false
	}
	switch r.Kind {
	case journal.KindEvent:
		if r.Path == eventRollbackPath {
			return pathEventOf(r), true
		}
		e = ctl.Event{Seq: r.Seq, Time: r.Time, Turn: r.Turn, Step: r.Step, Type: r.Path}
		var d struct {
			ID, Anchor string
			ctl.RollbackResult
		}
		json.Unmarshal(r.Detail, &d)
		e.ID, e.Anchor = d.ID, d.Anchor
		if r.Path == journal.EventStep {
			e.Name = journal.StepOf(r).Name
		}
		if r.Path == journal.EventTurnPruned {
			var p struct {
				Turn   uint64
				Reason string
			}
			json.Unmarshal(r.Detail, &p)
			e.Turn, e.Reason = p.Turn, p.Reason
		}
		if r.Path == journal.EventRollback || r.Path == journal.EventUnrevert {
			e.Rollback, e.Target, e.Marker, e.Failure = d.Rollback, d.Target, d.Marker, d.Failure
			counts := d.Counts
			e.Counts = &counts
		}
	case journal.KindCreate, journal.KindLink:
		e.Kind = changeCreated
	case journal.KindRemove:
		e.Kind = changeDeleted
	case journal.KindRename:
		if aside.Private(r.Path2) {
			return e, false
		}
		e.Kind, e.From, e.Path = ctl.KindMoved, ctl.Path(r.Path), ctl.Path(r.Path2)
	case journal.KindData:
		e.Kind = changeModified
	case journal.KindAttr:
		switch {
		case r.Cause == journal.CauseDirent:
			return e, false
		case r.Cause.Content():
			e.Kind = changeModified
		default:
			e.Kind = changeMetadata
		}
	case journal.KindXattr:
		e.Kind = changeMetadata
	case journal.KindOutside:
		e.Kind, e.Outside = outsideKind(r.Cause), true
	default:
		return e, false
	}
	return e, true
}

// stoppingNow tells whether Stop has begun.
func (s *service) stoppingNow() bool {
	select {
	case <-s.d.stopping:
		return true
	default:
		return false
	}
}
