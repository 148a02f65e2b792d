package rollback

import "github.com/cowfs/cowfs/journal"

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
// Those records — each in the top's range and not among those it
// skipped (conflicts, failures: still in effect), and every record of
// the top's group — are walked in the namespace model, so the paths of
// the rest stay right, but give no step and no conflict. What the top
// left in effect is undone now, like any record in range (so a step
// that failed or conflicted then is tried again). The new rollback's
// own group is then just the undo of the turns between the two targets,
// and its skipped records are again exactly what stays in effect in its
// range, so the next level can do the same. A rollback towards a later
// turn than the top's (taking back part of the stack) undoes everything
// in its range, as before.

// settledBy returns what the top of the stack settled, for a rollback
// whose target began at from, or nil if nothing (no stack, or a target
// after the top's).
func settledBy(j *journal.Journal, from uint64) (func(*rec) bool, error) {
	top, err := stackTop(j)
	if err != nil || top == nil || from > top.From {
		return nil, err
	}
	left := make(map[uint64]bool, len(top.Skipped))
	for _, seq := range top.Skipped {
		left[seq] = true
	}
	return func(r *rec) bool {
		return r.Group == top.ID || r.Seq >= top.From && r.Seq < top.To && !left[r.Seq]
	}, nil
}

// stackTop returns the last rollback done since the last turn began, if
// any.
func stackTop(j *journal.Journal) (*journal.Rollback, error) {
	rbs, err := j.Rollbacks()
	if err != nil {
		return nil, err
	}
	for i := len(rbs) - 1; i >= 0; i-- {
		if rbs[i].State == journal.RollbackDone {
			return &rbs[i], nil
		}
	}
	return nil, nil
}
