package rollback

import (
	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
)

// Skipped records are retried (the dsh design's rule): a record an
// earlier rollback skipped stays in the journal, the agent's still —
// in the stack's Skipped until the next turn begins, kept by Settle
// after — and the next rollback that covers it plans it like any other
// record of the turns. It is undone if what made the earlier rollback
// skip it is gone: a step that failed, or a path that held something
// else, is checked again as the plan and the run check every step; a
// conflict with a change outside the turns is gone only once that
// change is no longer in effect (undone.go). Otherwise it is skipped
// again, for the same reasons, and kept again. The report marks the
// paths whose skipped records this rollback undid (PathAction.Retried).

// retried returns, for plan (over recs), the workspace paths of the
// steps it runs that undo records an earlier rollback skipped.
func (p *planner) retried(plan *Plan, recs []rec) map[string]bool {
	before, err := p.skippedBefore(recs)
	if err != nil || len(before) == 0 {
		return nil // the report says less; the plan is the same
	}
	paths := map[string]bool{}
	var add func(s *Step)
	add = func(s *Step) {
		if s.Skip != "" {
			return
		}
		if s.Op != "" && before[s.Seq] {
			for _, q := range []string{s.Path, s.Path2} {
				if q != "" && !aside.Private(q) {
					paths[q] = true
				}
			}
		}
		for i := range s.Covers {
			add(&s.Covers[i])
		}
	}
	plan.eachStep(0, func(_ int, s *Step) error {
		add(s)
		return nil
	})
	return paths
}

// skippedBefore returns the records among recs that an earlier rollback
// skipped: kept by a settle, or skipped by a rollback of the stack.
func (p *planner) skippedBefore(recs []rec) (map[uint64]bool, error) {
	kept, err := p.env.Journal.Kept()
	if err != nil {
		return nil, err
	}
	rbs, err := p.env.Journal.Rollbacks()
	if err != nil {
		return nil, err
	}
	stacked := map[uint64]bool{}
	for _, rb := range rbs {
		if rb.State == journal.RollbackDone {
			for _, s := range rb.Skipped {
				stacked[s] = true
			}
		}
	}
	out := map[uint64]bool{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != journal.KindEvent && p.undoes(r) && (stacked[r.Seq] || kept.Is(r.Turn, r.Group)) {
			out[r.Seq] = true
		}
	}
	return out, nil
}
