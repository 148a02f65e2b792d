package rollback

import (
	"errors"

	"github.com/cowfs/cowfs/journal"
)

// Rollbacks in a stack.
//
// A rollback undoes every record since its target began. In a stack —
// "undo" pressed again and again, each a rollback to before an earlier
// turn — that range holds the rollbacks below it too: the top one undid
// the turns from its own target on, and its records (its group) are the
// undo of that. Undoing all of it again, the group (which redoes those
// turns) and then the turns (which undoes them), gets to the same files
// and journals both ways once more; each rollback's group then held all
// the ones below it, and the cost doubled with every level.
//
// A rollback to a turn at or before the top's target (the usual walk
// back) skips what the top already settled: the records it undid are
// undone, and its group is their undo, so together they change nothing.
// Those records — each in the top's range that its plan undid with a
// step, and every record of the top's group — are walked in the
// namespace model, so the paths of the rest stay right, but give no step
// and no conflict. The rest of the top's range is planned again, like any
// record: what the top skipped (conflicts, failures: still in effect),
// so it is tried again (where its paths allow: settledHere); and what
// needed no step then, since that may have been only because a change
// it skipped had taken the path away (a file made in a turn, which a
// later change the top skipped removed), and once that change is undone
// now, the older one needs its step. The new rollback's own group is
// then just the undo of the turns between the two targets, and its
// skipped records are again exactly what stays in effect in its range,
// so the next level can do the same. A rollback towards a later turn
// than the top's (taking back part of the stack) undoes everything in
// its range, as before.

// settledBy returns what the stack settled, for a rollback whose target
// began at from, or nil if nothing (no stack, or a target after the
// top's). It also returns the records the top skipped.
//
// The top settled the records its plan undid with a step and its own
// group. If the top was itself a rollback of this kind (its target at or
// before the one below it), the records the one below had settled were
// settled for it too, and walked without a step: so they are still
// settled now, and so on down the stack as far as such rollbacks go. A
// rollback towards a later turn planned its whole range, and ends the
// chain.
func settledBy(j *journal.Journal, from uint64) (func(*rec) bool, map[uint64]bool, error) {
	stack, err := stackOf(j)
	if err != nil || len(stack) == 0 || from > stack[len(stack)-1].From {
		return nil, nil, err
	}
	top := &stack[len(stack)-1]
	skipped := make(map[uint64]bool, len(top.Skipped))
	for _, seq := range top.Skipped {
		skipped[seq] = true
	}
	groups := map[uint64]bool{}
	stepped := map[uint64]bool{}
	for i := len(stack) - 1; i >= 0; i-- {
		rb := &stack[i]
		groups[rb.ID] = true
		if err := addStepped(j, rb, stepped); err != nil {
			return nil, nil, err
		}
		if i == 0 || rb.From > stack[i-1].From {
			break // it planned its whole range
		}
	}
	return func(r *rec) bool { return groups[r.Group] || stepped[r.Seq] }, skipped, nil
}

// errPlanWhole: a record the top skipped, retried now, is not where
// its own paths say (settledHere), so the plan is made again, whole.
var errPlanWhole = errors.New("rollback: a retried record is not where its paths say")

// settledHere reports whether retrying r, which the top skipped, can go
// by r's own paths among the records the top settled.
//
// A step acts on the paths its record names, which hold what they held
// right after that record only because every newer record has been
// undone by then. The records the top settled get no step now: the
// workspace is as they and its group left it, and the plan's namespace
// walks them. A record the top skipped (it conflicted, or failed) sits
// among them, and is retried now: its paths are right only if the
// namespace the plan has walked so far leaves each where it is — no
// settled record moved it, or a directory above it. Then the step acts
// where the record says. Otherwise the plan is made whole, as a
// rollback towards a later turn is: every record undone in order.
func (p *planner) settledHere(now *past, r *rec) bool {
	for _, q := range []string{r.Path, r.Path2} {
		if q == "" {
			continue
		}
		if e := now.lookup(q); !e.absent && !e.gone && (e.kept || e.loc != q) {
			return false
		}
	}
	return true
}

// plan builds the plan of recs; a stacked rollback whose retried
// records are not where their paths say is planned whole (settledHere).
func (p *planner) plan(recs []rec) (*Plan, error) {
	pl, err := p.build(recs)
	if errors.Is(err, errPlanWhole) {
		p.done()
		p.settled, p.topSkipped = nil, nil
		pl, err = p.build(recs)
	}
	return pl, err
}

// addStepped adds to stepped the records rollback rb undid with a step
// that ran: those its stored plan steps, bar those it skipped at run
// time.
func addStepped(j *journal.Journal, rb *journal.Rollback, stepped map[uint64]bool) error {
	plan, err := storedPlan(j, rb)
	if err != nil {
		return err
	}
	skipped := make(map[uint64]bool, len(rb.Skipped))
	for _, seq := range rb.Skipped {
		skipped[seq] = true
	}
	var add func(s *Step)
	add = func(s *Step) {
		if s.Skip == "" && s.Op != "" && !skipped[s.Seq] {
			stepped[s.Seq] = true
		}
		for i := range s.Covers {
			add(&s.Covers[i])
		}
	}
	return plan.eachStep(0, func(_ int, s *Step) error {
		add(s)
		return nil
	})
}

// stackOf returns the rollbacks done since the last turn began, bottom
// first: the stack. (A turn's beginning settles the rollbacks before it;
// those a settle has yet to reach are not the stack either.)
func stackOf(j *journal.Journal) ([]journal.Rollback, error) {
	rbs, err := j.Rollbacks()
	if err != nil {
		return nil, err
	}
	ts, err := j.Turns()
	if err != nil {
		return nil, err
	}
	var since uint64
	if len(ts) > 0 {
		since = ts[len(ts)-1].StartSeq
	}
	var stack []journal.Rollback
	for _, rb := range rbs {
		if rb.State == journal.RollbackDone && rb.To > since {
			stack = append(stack, rb)
		}
	}
	return stack, nil
}
