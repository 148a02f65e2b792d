package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/cowfs/cowfs/agent"
	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/rollback"
)

// service implements ctl.Service for a daemon.
type service struct{ d *Daemon }

var _ ctl.Service = (*service)(nil)

func (s *service) Status(ctx context.Context) (ctl.Status, error) {
	d := s.d
	st := ctl.Status{
		Version: d.opts.Version, Workspace: d.opts.Workspace, Mountpoint: d.opts.Mountpoint,
		Journal: d.opts.JournalDir, Socket: d.Socket(), Listen: d.ListenURL(), Pid: os.Getpid(),
		StartedAt: d.started, Window: d.j.Window(), Sync: d.opts.Sync,
		Resources: resources(),
	}
	if u, err := d.j.Usage(); err == nil {
		st.JournalBytes, st.ContentBytes, st.FreeBytes = u.Bytes, u.Content, u.Free
	} else {
		st.JournalBytes = d.j.Size()
	}
	st.MaxJournalBytes = d.j.MaxSize()
	if err := d.j.Broken(); err != nil {
		st.JournalError = err.Error()
	}
	if d.mount != nil {
		st.FUSERequests = d.mount.Requests()
	}
	if d.scanner != nil {
		st.FullScan = d.scanner.FullScan()
	}
	ts, err := d.j.Turns()
	if err != nil {
		return st, err
	}
	st.Turns = len(ts)
	if len(ts) > 0 {
		st.OldestTurn, st.LatestTurn = ts[0].Num, ts[len(ts)-1].Num
	}
	st.PrunedEarly = s.prunedEarly(ts)
	if rbs, err := d.j.Rollbacks(); err == nil {
		st.Unrevertable = len(rbs)
	}
	if t, ok := d.j.OpenTurn(); ok {
		wt, err := s.summary(t, "", false)
		if err != nil {
			return st, err
		}
		st.OpenTurn = &wt.Turn
	}
	return st, nil
}

func (s *service) BeginTurn(ctx context.Context, req ctl.BeginTurnRequest) (ctl.Turn, error) {
	d := s.d
	if d.offline {
		return ctl.Turn{}, ErrOffline
	}
	// Dirty mmap pages written before the turn belong before it.
	if err := d.mount.FlushWriteback(); err != nil {
		d.log.Warn("flushing writeback before the turn", "err", err)
	}
	scope, err := d.turnScope(req.Agent)
	if err != nil {
		return ctl.Turn{}, err
	}
	d.rbMu.Lock()
	defer d.rbMu.Unlock()
	if _, open := d.j.OpenTurn(); !open {
		// What changed outside the mount since the last boundary
		// happened before this turn: journaled outside any turn. First,
		// while the records that explain the rest are all there.
		if _, err := d.rescan(false); err != nil {
			return ctl.Turn{}, apiError(err)
		}
		// The next turn drops rolled-back turns for good.
		if err := d.settle(); err != nil {
			return ctl.Turn{}, apiError(err)
		}
	}
	t, err := d.j.BeginAgentTurn(req.ID, req.Anchor, scope, time.Now())
	if err != nil {
		return ctl.Turn{}, apiError(d.openTurnRefusal(err, "beginning another"))
	}
	d.mount.EpochBegan()
	go d.prune()
	return turnOf(t), nil
}

// EndTurn ends the open turn. Offline (offline.go) it ends a turn whose
// daemon went away with it open, the same way: what changed since that
// daemon last journaled was found when the journal was opened, outside
// any turn, as a daemon started again would find it.
func (s *service) EndTurn(ctx context.Context) (ctl.Turn, error) {
	d := s.d
	// Dirty mmap pages written during the turn belong to it.
	if d.mount != nil {
		if err := d.mount.FlushWriteback(); err != nil {
			d.log.Warn("flushing writeback at the end of the turn", "err", err)
		}
	}
	// What changed outside the mount during the turn belongs to it.
	if _, err := d.rescan(true); err != nil {
		return ctl.Turn{}, apiError(err)
	}
	t, err := d.j.EndTurn(time.Now())
	if err != nil {
		return ctl.Turn{}, apiError(err)
	}
	if d.mount != nil {
		d.mount.EpochBegan()
	} else {
		d.log.Info("ended without a daemon", "turn", t.Num)
	}
	wt, err := s.summary(t, "", false)
	return wt.Turn, err
}

func (s *service) Turns(ctx context.Context) (ctl.TurnList, error) {
	ts, err := s.d.j.Turns()
	if err != nil {
		return ctl.TurnList{}, err
	}
	list := ctl.TurnList{Turns: []ctl.Turn{}}
	for _, t := range ts {
		wt, err := s.summary(t, "", false)
		if err != nil {
			return list, err
		}
		list.Turns = append(list.Turns, wt.Turn)
	}
	var idle folder
	err = s.d.j.Scan(0, 0, false, func(r *journal.Record) error {
		if r.Turn == 0 && r.Group == 0 {
			idle.Add(r)
		}
		return nil
	})
	list.OutsideTurns = len(visible(idle.Changes()))
	list.PrunedEarly = s.prunedEarly(ts)
	return list, err
}

// prunedEarly says why the window holds fewer turns than it keeps, if
// turns left it early (journal/space.go) right before the oldest in ts.
func (s *service) prunedEarly(ts []journal.Turn) *ctl.PrunedEarly {
	e, ok := s.d.j.LastEarlyPrune()
	if !ok || len(ts) > 0 && e.Through+1 < ts[0].Num {
		return nil
	}
	return &ctl.PrunedEarly{Through: e.Through, Reason: e.Reason, Time: e.Time}
}

func (s *service) Turn(ctx context.Context, ref, step string) (ctl.TurnDetail, error) {
	t, err := s.findTurn(ref)
	if err != nil {
		return ctl.TurnDetail{}, err
	}
	return s.summary(t, step, true)
}

// findTurn resolves a turn reference (journal.ParseTurnRef: a number,
// or an id), telling a turn that left the window from one that never
// existed, and a reference that reads as a number but is no turn
// number from both (bad_request).
func (s *service) findTurn(ref string) (journal.Turn, error) {
	t, err := s.d.j.FindTurn(ref)
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, journal.ErrTurnNotFound) {
		return t, apiError(err)
	}
	n, byNumber, _ := journal.ParseTurnRef(ref)
	if !byNumber {
		n, byNumber = s.d.j.GoneTurn(ref)
	}
	ts, _ := s.d.j.Turns()
	if byNumber && len(ts) > 0 && n >= 1 && n < ts[0].Num {
		oldest, latest := ts[0].Num, ts[len(ts)-1].Num
		e := ctl.Errorf(ctl.CodeOutOfWindow, "turn %s has left the window; turns %d to %d can be reached", turnName(ref, n), oldest, latest)
		e.Oldest, e.Latest = oldest, latest
		return t, e
	}
	return t, ctl.Errorf(ctl.CodeNotFound, "no turn %q", ref)
}

// summary describes t and counts its changes (only step's, if not
// empty); with list, it lists them too. Ending a turn, status and the
// list of turns only count: a turn of 100,000 paths then costs its
// fold, not a list of 100,000 changes to throw away.
func (s *service) summary(t journal.Turn, step string, list bool) (ctl.TurnDetail, error) {
	end := t.EndSeq
	if t.Open() {
		end = 0
	}
	// The agent's records and the others' are folded apart: a path both
	// changed is listed twice, once as the turn's change and once as
	// the others' (ctl.Change.Agent).
	var fold, others folder
	var records int
	var stored int64
	err := s.d.j.Scan(t.StartSeq, end, false, func(r *journal.Record) error {
		if r.Turn == t.Num && r.Kind != journal.KindEvent && (step == "" || r.Step == step) {
			if r.NotAgent {
				others.Add(r)
			} else {
				fold.Add(r)
			}
			records++
			stored += r.Stored
		}
		return nil
	})
	if err != nil {
		return ctl.TurnDetail{}, err
	}
	d := ctl.TurnDetail{Turn: turnOf(t), Changes: []ctl.Change{}}
	d.Records, d.JournalBytes = records, stored
	if !list {
		inWorkspace := func(c *change) bool { return !aside.Private(c.Path) }
		d.ChangedPaths, d.NotAgentPaths = fold.Count(inWorkspace), others.Count(inWorkspace)
		return d, nil
	}
	d.Changes, d.ChangedPaths, d.NotAgentPaths = changesOf(&fold, &others)
	return d, nil
}

// changesOf lists the changes the agent's records (fold) and the
// others' made, by path, the agent's change to a path before the
// others', and counts each.
func changesOf(fold, others *folder) (list []ctl.Change, agents, notAgents int) {
	changes, otherChanges := visible(fold.Changes()), visible(others.Changes())
	list = make([]ctl.Change, 0, len(changes)+len(otherChanges))
	for _, c := range changes {
		list = append(list, changeOf(c))
	}
	for _, c := range otherChanges {
		ch := changeOf(c)
		ch.Agent = ctl.NotAgent()
		list = append(list, ch)
	}
	sort.SliceStable(list, func(a, b int) bool { return list[a].Path < list[b].Path })
	return list, len(changes), len(otherChanges)
}

func changeOf(c change) ctl.Change {
	return ctl.Change{
		Path: ctl.Path(c.Path), Kind: c.Kind, From: ctl.Path(c.From), Type: typeName(c.Type), Bytes: c.Bytes,
		Outside: c.Outside,
		Pid:     c.Caller.Pid, Uid: c.Caller.Uid, Command: c.Caller.Comm, CommandLine: c.Caller.Cmdline, Time: c.Time, Step: c.Step,
	}
}

// visible drops changes inside cowfs's private directory.
func visible(cs []change) []change {
	out := cs[:0]
	for _, c := range cs {
		if !aside.Private(c.Path) {
			out = append(out, c)
		}
	}
	return out
}

func turnOf(t journal.Turn) ctl.Turn {
	wt := ctl.Turn{Num: t.Num, ID: t.ID, Anchor: t.Anchor, State: ctl.StateOpen, BeganAt: t.Began, Agent: scopeOf(t.Agent)}
	if t.RevertedBy != 0 {
		wt.State = ctl.StateReverted
	}
	if !t.Open() {
		if wt.State == ctl.StateOpen {
			wt.State = ctl.StateClosed
		}
		ended := t.Ended
		wt.EndedAt = &ended
	}
	return wt
}

func typeName(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return "dir"
	case syscall.S_IFLNK:
		return "symlink"
	case syscall.S_IFIFO:
		return "fifo"
	case syscall.S_IFSOCK:
		return "socket"
	case syscall.S_IFCHR:
		return "char"
	case syscall.S_IFBLK:
		return "block"
	}
	return "file"
}

func (s *service) Content(ctx context.Context, at, path string) (io.ReadCloser, error) {
	d := s.d
	rel, err := backing.CleanPath(path)
	if err != nil {
		return nil, apiError(err)
	}
	if aside.Private(rel) {
		return nil, ctl.Errorf(ctl.CodeNotFound, "%s is not in the workspace", path)
	}
	t, err := s.findTurn(at)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(d.loc.Dir, "content-*")
	if err != nil {
		return nil, err
	}
	os.Remove(tmp.Name()) // anonymous: gone once closed
	if err := s.materialize(t, rel, tmp); err != nil {
		tmp.Close()
		return nil, apiError(err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return nil, err
	}
	return tmp, nil
}

// materialize writes into dst what rel held when t began.
//
// The object and the records that say what it held must be read as of
// one moment, which the journal's exclusive gate gives — but holding it
// while a large file is copied would stall every write through the
// mount. So the gate is held to pin the records (journal.Pin), undo
// them into a model of the namespace as it was, find the object the
// path then named and open it; and left for the copy. A change made
// during the copy journaled its pre-image before it proceeded: the
// records appended meanwhile are read after the copy and put back too
// (rollback.At), so the copy ends as the object was when t began —
// the start of an epoch, which later changes cannot hide.
func (s *service) materialize(t journal.Turn, rel string, dst *os.File) error {
	d := s.d
	g, pin := d.j.Pin()
	held := true
	defer func() {
		pin.Release()
		if held {
			g.Leave()
		}
	}()
	// Found again under the pin: a prune between finding the turn and
	// pinning may have taken it and its records.
	if _, err := d.j.FindTurn(fmt.Sprint(t.Num)); err != nil {
		return apiError(err)
	}
	at, err := rollback.Since(d.j, d.tree, t.StartSeq, pin.Seq, d.area.Path, d.rootDev)
	if err != nil {
		return err
	}
	v, err := at.Find(rel)
	if err != nil {
		return apiError(err)
	}
	switch {
	case !v.Exists:
		return ctl.Errorf(ctl.CodeNotFound, "%s did not exist when turn %d began", rel, t.Num)
	case v.Type == syscall.S_IFDIR:
		return ctl.Errorf(ctl.CodeBadRequest, "%s was a directory when turn %d began", rel, t.Num)
	case v.Type == syscall.S_IFLNK:
		target, _ := d.tree.Readlink(v.Loc)
		return ctl.Errorf(ctl.CodeBadRequest, "%s was a symlink to %q when turn %d began", rel, target, t.Num)
	case v.Type != syscall.S_IFREG:
		return ctl.Errorf(ctl.CodeBadRequest, "%s was not a regular file when turn %d began", rel, t.Num)
	}
	src, err := v.Open(d.tree)
	if err != nil {
		return err
	}
	defer src.Close()
	g.Leave()
	held = false
	if d.leftGate != nil {
		d.leftGate()
	}
	return v.MaterializeFrom(src, d.j, dst)
}

func (s *service) Shutdown(ctx context.Context) error {
	go s.d.Stop()
	return nil
}

// apiError gives journal and rollback errors their control-socket code.
func apiError(err error) error {
	var e *ctl.Error
	switch {
	case errors.As(err, &e):
		return err
	// Damage first: whatever else the error says (a path it was read
	// for), the journal lost what was asked, and no retry brings it back.
	case errors.Is(err, journal.ErrDamaged):
		return ctl.Errorf(ctl.CodeInternal, "%v; %s", err, damageHint)
	case errors.Is(err, journal.ErrBusy), errors.Is(err, journal.ErrPartial):
		return ctl.Errorf(ctl.CodeBusy, "%v", err)
	case errors.Is(err, journal.ErrNoTurn), errors.Is(err, journal.ErrDuplicateID),
		errors.Is(err, rollback.ErrNothingToUnrevert):
		return ctl.Errorf(ctl.CodeConflict, "%v", err)
	case errors.Is(err, journal.ErrTurnNotFound):
		return ctl.Errorf(ctl.CodeNotFound, "%v", err)
	case errors.Is(err, journal.ErrInvalid), errors.Is(err, backing.ErrEscapes), errors.Is(err, backing.ErrBadPath),
		errors.Is(err, agent.ErrNoProcess), errors.Is(err, agent.ErrNoCgroup):
		return ctl.Errorf(ctl.CodeBadRequest, "%v", err)
	// A path the workspace cannot resolve as asked: it goes through a
	// symbolic link (which cowfs never follows), out of the workspace,
	// through a file, or is too long.
	case errors.Is(err, syscall.ELOOP):
		return ctl.Errorf(ctl.CodeBadRequest, "%v (the path goes through a symbolic link, which cowfs does not follow)", err)
	case errors.Is(err, syscall.EXDEV), errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EISDIR):
		return ctl.Errorf(ctl.CodeBadRequest, "%v", err)
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		return ctl.Errorf(ctl.CodeNotFound, "%v", err)
	case errors.Is(err, rollback.ErrNoPreimage):
		return ctl.Errorf(ctl.CodeConflict, "%v", err)
	}
	return fmt.Errorf("%w", err)
}

// damageHint says what to do about a damaged journal.
const damageHint = "'cowfs fsck' (with the workspace unmounted) lists what the journal cannot give back, and 'cowfs fsck --export DIR' saves what it still can"

// turnName names turn n, given by ref, in a message.
func turnName(ref string, n uint64) string {
	if ref == strconv.FormatUint(n, 10) {
		return ref
	}
	return fmt.Sprintf("%d (%q)", n, ref)
}
