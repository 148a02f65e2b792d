package rollback

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
)

// Errors a rollback request can fail with before anything changes.
var (
	// ErrNothingToUnrevert: no rollback since the last turn began.
	ErrNothingToUnrevert = errors.New("nothing to unrevert: no rollback since the last turn began")
)

// Outcome is what a rollback or an unrevert did (or, dry, would do).
type Outcome struct {
	Target   uint64          `json:"target"`
	DryRun   bool            `json:"dry_run"`
	Rollback uint64          `json:"rollback,omitempty"` // its id
	Report   []PathAction    `json:"report"`
	Counts   Counts          `json:"counts"`
	Marker   *journal.Marker `json:"marker,omitempty"`
	// Complete is false for a rollback that stopped at a step that
	// failed (Failure says how): it is partial, left no marker, reverted
	// no turn, and finishes when retried.
	Complete bool   `json:"complete"`
	Failure  string `json:"failure,omitempty"`
}

// Note is the line a rollback's marker gives the model.
func Note(turn uint64) string {
	return fmt.Sprintf("[cowfs] Messages from turn %d on were removed and the workspace files restored to match. Continue from here; do not mention this.", turn)
}

// Rollback puts the workspace back as it was when turn target began:
// every record from then on is undone, newest first, except changes
// made outside turns (and what they touched), which are skipped and
// reported unless force. With dryRun it only plans. It holds the
// journal's gate throughout and fails with journal.ErrBusy while a turn
// is open.
func Rollback(env *Env, target journal.Turn, force, dryRun bool) (*Outcome, error) {
	writeback(env)
	g := env.Journal.Exclusive()
	defer g.Leave()
	if t, open := g.OpenTurn(); open {
		return nil, fmt.Errorf("%w: turn %d; end it before rolling back", journal.ErrBusy, t.Num)
	}
	if err := env.Journal.CheckSettled(); err != nil {
		return nil, err
	}
	if rb, err := env.Journal.Partial(); err != nil {
		return nil, err
	} else if rb != nil {
		if rb.Target != target.Num {
			return nil, env.Journal.CheckNoPartial()
		}
		return retry(env, g, rb, dryRun)
	}
	if err := rescan(env, g); err != nil {
		return nil, err
	}
	to := env.Journal.NextSeq()
	env.shedFor(target.StartSeq, to)
	recs, err := scanBack(env.Journal, target.StartSeq, to)
	if err != nil {
		return nil, err
	}
	p, err := rollbackPlanner(env, target, force)
	if err != nil {
		return nil, err
	}
	defer p.done()
	plan, err := p.plan(recs)
	if err != nil {
		return nil, err
	}
	plan.Target, plan.From, plan.To = target.Num, target.StartSeq, to
	plan.Report = p.report(plan, recs)
	p.done()
	out := &Outcome{Target: target.Num, DryRun: dryRun, Report: plan.Report, Counts: Count(plan.Report), Complete: true}
	if dryRun {
		return out, nil
	}

	turns, err := env.Journal.Turns()
	if err != nil {
		return nil, err
	}
	rb := &journal.Rollback{Target: target.Num, Force: force, From: target.StartSeq, To: to, Started: time.Now().UTC(),
		Skipped: plan.Skipped}
	for _, t := range turns {
		if t.Num >= target.Num && t.RevertedBy == 0 {
			rb.Reverted = append(rb.Reverted, t.Num)
		}
	}
	// Stored before the first step: a crash from here on is finished
	// by Resume from the same plan.
	if err := env.Journal.NewRollback(rb, plan.stored()); err != nil {
		return nil, err
	}
	return finishRollback(env, g, rb, plan, 0, false)
}

// rollbackPlanner returns the planner of a rollback to before target
// over recs, the records since target began: it undoes the turns' and
// the stacked rollbacks' records, but for what the stack settled
// (stack.go).
func rollbackPlanner(env *Env, target journal.Turn, force bool) (*planner, error) {
	settled, topSkipped, err := settledBy(env.Journal, target.StartSeq)
	if err != nil {
		return nil, err
	}
	return &planner{env: env, force: force, target: func(r *rec) bool { return r.Turn != 0 || r.Group != 0 },
		settled: settled, topSkipped: topSkipped}, nil
}

// retry goes on with partial rollback rb from the step that failed.
func retry(env *Env, g journal.Gate, rb *journal.Rollback, dryRun bool) (*Outcome, error) {
	plan, err := storedPlan(env.Journal, rb)
	if err != nil {
		return nil, err
	}
	if dryRun {
		return &Outcome{Target: rb.Target, DryRun: true, Report: plan.Report, Counts: Count(plan.Report), Complete: true}, nil
	}
	return finishRollback(env, g, rb, plan, rb.Next, true)
}

// finishRollback executes a stored rollback's plan from step from on and
// marks it done — or partial, if a step failed: then the plan is stored
// again with what this run learnt (the conflicts it found at run time
// become planned skips), so that a retry goes on from the failed step
// and reports the same. A retry (retrying) skips and reports the steps
// that fail for reasons of their own paths, the one it stopped at
// included, and goes on (executor.retrying).
func finishRollback(env *Env, g journal.Gate, rb *journal.Rollback, plan *Plan, from int, retrying bool) (*Outcome, error) {
	plan.pack()
	x := &executor{env: env, names: fmt.Sprintf("rb%d-", rb.ID), retrying: retrying,
		log: newUndoLog(env.Journal, g, rb.ID, env.RootDev)}
	x.progress = saveProgress(env, rb, plan, x, true)
	failed, ferr := x.run(plan, from)
	refresh(env, g)
	learn(plan, x)
	rb.Skipped = plan.Skipped
	out := &Outcome{Target: rb.Target, Rollback: rb.ID, Report: plan.Report, Complete: ferr == nil}
	if ferr != nil {
		rb.State, rb.Next, rb.Failure = journal.RollbackPartial, failed, ferr.Error()
		if err := env.Journal.SaveRollback(rb, plan.stored()); err != nil {
			return nil, err
		}
		out.Failure = rb.Failure
		report, err := unfinished(plan, failed, ferr)
		if err != nil {
			return nil, err
		}
		out.Report = report
		out.Counts = Count(out.Report)
		return out, nil
	}
	rb.Finished = time.Now().UTC()
	target := journal.Turn{Num: rb.Target}
	if t, err := env.Journal.FindTurn(fmt.Sprint(rb.Target)); err == nil {
		target = t
	}
	m := journal.Marker{Turn: target.Num, ID: target.ID, Anchor: target.Anchor, CreatedAt: rb.Finished,
		Note: Note(target.Num), Rollback: rb.ID}
	if err := env.Journal.FinishRollback(rb, m); err != nil {
		return nil, err
	}
	out.Marker, out.Counts = rb.Marker, Count(out.Report) // m with the markers it replaces
	return out, nil
}

// saveProgress returns the executor's progress hook for the stored
// rollback rb (or its unrevert): after each step it stores how far the
// run got (rb.Next), and the conflicts found at run time so far, folded
// into the stored plan. A run a crash interrupts goes on from there
// (Resume). It must not start again from the first step: a step done
// before the crash, followed by a later step that moved what it
// changed (a rename undone), would find its path holding another inode
// and report a conflict that is not one. Only the last step may run
// twice, and each step finds its own result already there.
func saveProgress(env *Env, rb *journal.Rollback, plan *Plan, x *executor, rollback bool) func(int) error {
	return func(next int) error {
		if len(x.skipped) == 0 {
			return env.Journal.SaveProgress(rb, next)
		}
		learn(plan, x)
		x.skipped = nil
		rb.Next = next
		if rollback {
			rb.Skipped = plan.Skipped
		}
		return env.Journal.SaveRollback(rb, plan.stored())
	}
}

// learn folds what a run found into its plan: steps skipped for a
// conflict found at run time are skipped in the plan, and the report
// says so for their paths.
func learn(plan *Plan, x *executor) {
	if len(x.skipped) == 0 {
		return
	}
	if plan.skips == nil {
		plan.skips = map[uint64]string{}
	}
	for _, seq := range x.skipped {
		if _, ok := plan.skips[seq]; !ok {
			plan.skips[seq] = x.why[seq]
		}
	}
	plan.Skipped = append(plan.Skipped, x.skipped...)
	plan.Report = applySkips(plan.Report, x.reasons)
}

// unfinished is the report of a run that stopped at step failed: the
// paths of that step and of the steps after it are not done.
func unfinished(plan *Plan, failed int, err error) ([]PathAction, error) {
	var at string
	reasons := map[string]string{}
	eerr := plan.eachStep(failed, func(i int, s *Step) error {
		if i == failed {
			at = stepPath(s)
		}
		if s.Skip != "" || s.Op == "" {
			return nil
		}
		for _, p := range []string{s.Path, s.Path2} {
			if p != "" && !aside.Private(p) && reasons[p] == "" {
				reasons[p] = "not done: the rollback stopped at " + at
			}
		}
		return nil
	})
	if eerr != nil {
		return nil, eerr
	}
	reasons[at] = "failed: " + err.Error()
	return applySkips(plan.Report, reasons), nil
}

// leftBy returns what an unrevert's steps left at each workspace path
// they name: the identity each put or found there, 0 for a path each
// emptied. Steps the plan or the run skipped left nothing and are not
// named. Computed from the plan, not the run, so that an unrevert
// resumed after a crash still names the steps done before it.
func leftBy(plan *Plan, x *executor) (map[string]uint64, error) {
	skipped := make(map[uint64]bool, len(x.skipped))
	for _, seq := range x.skipped {
		skipped[seq] = true
	}
	left := map[string]uint64{}
	put := func(p string, id uint64) {
		if p != "" && !aside.Private(p) {
			left[p] = id
		}
	}
	var add func(s *Step)
	add = func(s *Step) {
		if s.Skip != "" || s.Op == "" || skipped[s.Seq] {
			return
		}
		switch s.Op {
		case opRemove:
			put(s.Path, 0)
			for j := range s.Covers {
				add(&s.Covers[j])
			}
		case opRename:
			put(s.Path2, s.Ino)
			if s.Aside != "" {
				put(s.Path, s.Ino2)
			} else {
				put(s.Path, 0)
			}
		case opExchange:
			put(s.Path2, s.Ino)
			put(s.Path, s.Ino2)
		default: // recover, and the steps in place
			put(s.Path, s.Ino)
		}
	}
	err := plan.eachStep(0, func(_ int, s *Step) error {
		add(s)
		return nil
	})
	return left, err
}

// storedPlan reads the plan stored with rollback rb.
func storedPlan(j *journal.Journal, rb *journal.Rollback) (*Plan, error) {
	b, err := j.RollbackPlan(rb.ID)
	if err != nil {
		return nil, err
	}
	plan, err := decodePlan(b)
	if err != nil {
		return nil, fmt.Errorf("rollback %d: stored plan: %w", rb.ID, err)
	}
	return plan, nil
}

// decodePlan reads a plan as stored.
func decodePlan(b []byte) (*Plan, error) {
	var plan Plan
	if err := json.Unmarshal(b, &plan); err != nil {
		return nil, err
	}
	if plan.Packed != nil && len(plan.Packed.Parts) != (plan.Packed.N+packSteps-1)/packSteps {
		return nil, fmt.Errorf("%d steps in %d parts", plan.Packed.N, len(plan.Packed.Parts))
	}
	return &plan, nil
}

// Unrevert undoes the last rollback since the last turn began, putting
// the workspace back as it was just before it. Changes made since (outside
// turns) to what the rollback touched are skipped unless force. An
// unrevert that stopped at a failed step is gone on with from there.
func Unrevert(env *Env, force bool) (*Outcome, error) {
	writeback(env)
	g := env.Journal.Exclusive()
	defer g.Leave()
	if err := env.Journal.CheckSettled(); err != nil {
		return nil, err
	}
	rb, err := lastRollback(env.Journal)
	if err != nil {
		return nil, err
	}
	if err := rescan(env, g); err != nil {
		return nil, err
	}
	if rb.State == journal.RollbackUnreverting {
		// An unrevert stopped at a step that failed: go on with it,
		// from that step.
		plan, err := storedPlan(env.Journal, rb)
		if err != nil {
			return nil, err
		}
		return finishUnrevert(env, rb, plan, true)
	}
	env.shedFor(rb.To, env.Journal.NextSeq())
	recs, err := scanBack(env.Journal, rb.To, env.Journal.NextSeq())
	if err != nil {
		return nil, err
	}
	group := rb.ID
	p := &planner{env: env, force: force, target: func(r *rec) bool { return r.Group == group }}
	defer p.done()
	plan, err := p.build(recs)
	if err != nil {
		return nil, err
	}
	plan.Target, plan.From, plan.To = rb.Target, rb.To, env.Journal.NextSeq()
	plan.Report = p.report(plan, recs)
	rb.State, rb.Next = journal.RollbackUnreverting, 0
	rb.Run++
	if err := env.Journal.SaveRollback(rb, plan.stored()); err != nil {
		return nil, err
	}
	return finishUnrevert(env, rb, plan, false)
}

func finishUnrevert(env *Env, rb *journal.Rollback, plan *Plan, retrying bool) (*Outcome, error) {
	plan.pack()
	x := &executor{env: env, names: fmt.Sprintf("ur%d-", rb.ID), retrying: retrying}
	x.progress = saveProgress(env, rb, plan, x, false)
	// An unrevert journals nothing (the rollback's own records are what
	// it undoes), so a step that fails stops it with an error: the
	// rollback stays, and the unrevert can be tried again; its finished
	// steps find their results already there.
	_, err := x.run(plan, rb.Next)
	if env.Unjournaled != nil {
		left, perr := leftBy(plan, x)
		if perr == nil {
			perr = env.Unjournaled(left)
		}
		if perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("unrevert of rollback %d stopped: %w", rb.ID, err)
	}
	if err := env.Journal.Unreverted(rb, env.Aside.Drop); err != nil {
		return nil, err
	}
	report := applySkips(plan.Report, x.reasons)
	return &Outcome{Target: rb.Target, Rollback: rb.ID, Report: report, Counts: Count(report), Complete: true}, nil
}

// Resume finishes the rollbacks and unreverts a crash interrupted. It
// runs at start, before the mount serves anything.
func Resume(env *Env) ([]*Outcome, error) {
	g := env.Journal.Exclusive()
	defer g.Leave()
	rbs, err := env.Journal.Rollbacks()
	if err != nil {
		return nil, err
	}
	var outs []*Outcome
	for i := range rbs {
		rb := &rbs[i]
		if rb.State != journal.RollbackRunning && rb.State != journal.RollbackUnreverting {
			continue // done, or partial: waits for a retry or an unrevert
		}
		plan, err := storedPlan(env.Journal, rb)
		if err != nil {
			return outs, err
		}
		var out *Outcome
		switch rb.State {
		case journal.RollbackRunning:
			out, err = finishRollback(env, g, rb, plan, rb.Next, false)
		case journal.RollbackUnreverting:
			out, err = finishUnrevert(env, rb, plan, false)
		}
		if err != nil {
			return outs, err
		}
		outs = append(outs, out)
	}
	return outs, nil
}

// writeback runs env's writeback, if it has one, before the gate is
// taken. A dry run too: its preview must show the conflicts the real
// run will find. It cannot fail the rollback: a page it could not write
// is either lost to its writer (the kernel reports the error to it) or
// written back later, and then kept off what the rollback restores
// (Observer.Rewritten).
func writeback(env *Env) {
	if env.Writeback == nil {
		return
	}
	if err := env.Writeback(); err != nil && env.Log != nil {
		env.Log.Warn("writing dirty pages back before the rollback", "err", err)
	}
}

// rescan runs env's rescan, if it has one.
func rescan(env *Env, g journal.Gate) error {
	if env.Rescan == nil {
		return nil
	}
	if err := env.Rescan(g); err != nil {
		return fmt.Errorf("looking for changes outside the mount: %w", err)
	}
	return nil
}

// lastRollback returns the rollback an unrevert undoes (or is undoing:
// one that stopped at a failed step).
func lastRollback(j *journal.Journal) (*journal.Rollback, error) {
	rbs, err := j.Rollbacks()
	if err != nil {
		return nil, err
	}
	for i := len(rbs) - 1; i >= 0; i-- {
		switch rbs[i].State {
		case journal.RollbackDone, journal.RollbackPartial, journal.RollbackUnreverting:
			return &rbs[i], nil
		}
	}
	return nil, ErrNothingToUnrevert
}

// applySkips marks the paths steps skipped at run time.
func applySkips(report []PathAction, reasons map[string]string) []PathAction {
	if len(reasons) == 0 {
		return report
	}
	out := append([]PathAction(nil), report...)
	seen := map[string]bool{}
	for i := range out {
		if r, ok := reasons[out[i].Path]; ok {
			out[i].Action, out[i].Reason, out[i].Retried = Skip, r, false
			seen[out[i].Path] = true
		}
	}
	for p, r := range reasons {
		if !seen[p] {
			out = append(out, PathAction{Path: p, Action: Skip, Reason: r})
		}
	}
	return out
}
