package daemon

import (
	"context"
	"fmt"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/fs"
	"github.com/cowfs/cowfs/human"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/rollback"
)

// env is what rollbacks of this workspace work with.
func (d *Daemon) env() *rollback.Env {
	e := &rollback.Env{Journal: d.j, Tree: d.tree, Aside: d.area, RootDev: d.rootDev, Log: d.log, AfterStep: d.afterStep}
	if d.mount != nil {
		e.Observer = d.mount
		e.Writeback = d.mount.FlushMappedWriteback
		e.Shed = func() {
			asked, forgotten, err := d.mount.Shed()
			if err != nil {
				d.log.Debug("the kernel kept its cache of the workspace", "err", err)
				return
			}
			d.log.Info("let the kernel's cache of the workspace go, for a large rollback", "nodes", asked, "forgotten", forgotten)
		}
	}
	e.Rescan = func(g journal.Gate) error {
		_, err := d.scanUnder(g, false)
		return err
	}
	e.Refresh = d.scanner.Refresh
	e.Unjournaled = d.scanner.Accept
	return e
}

// flush tells the kernel to forget what it cached of the workspace, if
// it is mounted.
func (d *Daemon) flush() {
	if d.mount != nil {
		d.mount.Flush()
	}
}

// refusedWrites returns the writebacks the mount refused since the last
// call, logged: a process's writes through a shared mapping, made during
// a rollback, that came with pages cached before the rollback rewrote
// the file (fs/rewritten.go).
func (d *Daemon) refusedWrites() []fs.RefusedWrite {
	if d.mount == nil {
		return nil
	}
	ws := d.mount.TakeRefused()
	for _, w := range ws {
		d.log.Warn("refused a write through a shared mapping made during a rollback: its pages were cached before the rollback rewrote the file",
			"path", w.Path, "offset", w.Off, "length", w.Len, "pid", w.Pid, "command", w.Comm)
	}
	return ws
}

// noteRefused adds to res the writes refused during its run.
func noteRefused(res *ctl.RollbackResult, ws []fs.RefusedWrite) {
	for _, w := range ws {
		note := "a write through a shared mapping during the rollback was refused (the writer got EIO): its pages held bytes from before the restore"
		if w.Pid != 0 {
			note = fmt.Sprintf("a write through a shared mapping during the rollback (%s, pid %d) was refused (the writer got EIO): its pages held bytes from before the restore", w.Comm, w.Pid)
		}
		for i := range res.Paths {
			if string(res.Paths[i].Path) == w.Path {
				res.Paths[i].Note = note
			}
		}
	}
}

// resume finishes rollbacks a crash interrupted, before the mount
// serves anything.
func (d *Daemon) resume() error {
	outs, err := rollback.Resume(d.env())
	if err != nil {
		return fmt.Errorf("finishing an interrupted rollback: %w", err)
	}
	for _, o := range outs {
		note := fmt.Sprintf("finished rollback %d to before turn %d, interrupted by a crash: %s",
			o.Rollback, o.Target, summary(o.Counts))
		d.Notes = append(d.Notes, note)
		d.log.Warn(note)
		// Its events too: a finished unrevert leaves no marker, a
		// finished or again partial rollback leaves one or is
		// incomplete.
		if unrevert := o.Complete && o.Marker == nil; unrevert {
			d.event(journal.EventUnrevert, resultOf(o, true))
		} else {
			d.event(journal.EventRollback, resultOf(o, false))
		}
	}
	if err := d.j.CheckNoPartial(); err != nil {
		d.Notes = append(d.Notes, err.Error())
		d.log.Warn(err.Error())
	}
	return nil
}

func (s *service) Rollback(ctx context.Context, req ctl.RollbackRequest) (ctl.RollbackResult, error) {
	d := s.d
	if !d.rbMu.TryLock() {
		return ctl.RollbackResult{}, ctl.Errorf(ctl.CodeBusy, "another rollback is running; wait until it is done")
	}
	defer d.rbMu.Unlock()
	t, err := s.findTurn(string(req.To))
	if err != nil {
		return ctl.RollbackResult{}, err
	}
	d.refusedWrites() // not this rollback's
	out, err := rollback.Rollback(d.env(), t, req.Force, req.DryRun)
	d.flush()
	refused := d.refusedWrites()
	if err != nil {
		return ctl.RollbackResult{}, apiError(d.openTurnRefusal(err, "rolling back"))
	}
	res := resultOf(out, false)
	noteRefused(&res, refused)
	switch {
	case req.DryRun:
	case !out.Complete:
		d.log.Warn("rollback partial", "to_before", t.Num, "rollback", out.Rollback, "failure", out.Failure,
			"result", summary(out.Counts))
		d.event(journal.EventRollback, res)
	default:
		d.log.Info("rolled back", "to_before", t.Num, "rollback", out.Rollback, "result", summary(out.Counts))
		d.event(journal.EventRollback, res)
	}
	return res, nil
}

func (s *service) Unrevert(ctx context.Context, req ctl.UnrevertRequest) (ctl.RollbackResult, error) {
	d := s.d
	if !d.rbMu.TryLock() {
		return ctl.RollbackResult{}, ctl.Errorf(ctl.CodeBusy, "a rollback is running; wait until it is done")
	}
	defer d.rbMu.Unlock()
	d.refusedWrites() // not this unrevert's
	out, err := rollback.Unrevert(d.env(), req.Force)
	d.flush()
	refused := d.refusedWrites()
	if err != nil {
		return ctl.RollbackResult{}, apiError(err)
	}
	d.log.Info("unreverted", "rollback", out.Rollback, "result", summary(out.Counts))
	res := resultOf(out, true)
	noteRefused(&res, refused)
	d.event(journal.EventUnrevert, res)
	return res, nil
}

func (s *service) Markers(ctx context.Context) (ctl.MarkerList, error) {
	ms, err := s.d.j.Markers()
	if err != nil {
		return ctl.MarkerList{}, err
	}
	l := ctl.MarkerList{Markers: []ctl.Marker{}}
	for _, m := range ms {
		l.Markers = append(l.Markers, markerOf(m))
	}
	return l, nil
}

// settle makes pending rollbacks final as a turn begins.
func (d *Daemon) settle() error {
	names, err := d.j.Settle()
	if err != nil {
		return fmt.Errorf("forgetting rolled-back turns: %w", err)
	}
	if len(names) > 0 {
		go d.freeAside(names)
	}
	return nil
}

func resultOf(o *rollback.Outcome, unrevert bool) ctl.RollbackResult {
	r := ctl.RollbackResult{Target: o.Target, DryRun: o.DryRun, Unrevert: unrevert, Rollback: o.Rollback,
		Paths: make([]ctl.PathAction, 0, len(o.Report)), Counts: ctl.RollbackCounts(o.Counts),
		Complete: o.Complete, Failure: o.Failure}
	for _, a := range o.Report {
		r.Paths = append(r.Paths, ctl.PathAction{Path: ctl.Path(a.Path), Action: a.Action, Type: typeName(a.Type),
			Reason: a.Reason, From: ctl.Path(a.From), To: ctl.Path(a.To), Retried: a.Retried})
	}
	if o.Marker != nil && !unrevert {
		m := markerOf(*o.Marker)
		r.Marker = &m
	}
	return r
}

func markerOf(m journal.Marker) ctl.Marker {
	c := ctl.Marker{Turn: m.Turn, ID: m.ID, Anchor: m.Anchor, CreatedAt: m.CreatedAt, Note: m.Note}
	for _, r := range m.Replaces {
		c.Replaces = append(c.Replaces, markerOf(r))
	}
	return c
}

// summary is the counts in words, for logs.
func summary(c rollback.Counts) string {
	return fmt.Sprintf("%d restored, %d recovered, %d deleted, %d skipped; %s removed, %d recreated",
		c.Restored, c.Recovered, c.Deleted, c.Skipped, human.Count(c.DirsRemoved, "directory", "directories"), c.DirsRecreated)
}
