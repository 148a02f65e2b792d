package journal

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// forget deletes records for good, freeing the aside entries they name.
func (j *Journal) forget(recs []*Record, dropAside func(string) error) error {
	for _, r := range recs {
		if r.Aside != "" {
			if err := dropAside(r.Aside); err != nil {
				return err
			}
		}
	}
	return j.dropRecords(recs)
}

// Settle makes the stack of rollbacks final, as the next turn begins.
// The workspace sits before the top rollback's target: the turns from
// there on are forgotten, with every record the top rollback undid and
// its own records (the records of the rollbacks below it lie inside its
// range: it undid them too). Records it skipped stay, as changes outside
// a turn (they are still in effect, and no turn owns them). Records
// before its range are untouched: their turns are live, even if a
// rollback lower in the stack had reverted them.
//
// It returns the aside names the forgotten records held, for the
// caller to free when it likes: a rollback of a large tree keeps
// thousands, and unlinking them should not hold up the turn that
// begins. The records go first, so a crash before the names are freed
// leaves entries no record names, which the daemon sweeps at start
// (aside.Area.Sweep); never a record naming an entry that is gone.
//
// It fails with ErrPartial while a rollback waits to be retried or
// undone.
func (j *Journal) Settle() (asides []string, err error) {
	rbs, err := j.Rollbacks()
	if err != nil || len(rbs) == 0 {
		return nil, err
	}
	for i := range rbs {
		switch rbs[i].State {
		case RollbackDone:
		case RollbackPartial:
			return nil, partialError(&rbs[i])
		default:
			return nil, fmt.Errorf("journal: rollback %d is %s; finish it first", rbs[i].ID, rbs[i].State)
		}
	}
	top := rbs[len(rbs)-1]
	skipped := map[uint64]bool{}
	for _, s := range top.Skipped {
		skipped[s] = true
	}
	var drop, keep []*Record
	err = j.Scan(top.From, 0, false, func(r *Record) error {
		switch {
		case r.Seq < top.To && skipped[r.Seq]:
			keep = append(keep, r)
		case r.Seq < top.To || r.Group == top.ID:
			drop = append(drop, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	turns, err := j.Turns()
	if err != nil {
		return nil, err
	}
	// Records are relabelled before anything is deleted: a crash in
	// between leaves them as changes outside a turn, which is what they
	// become anyway.
	err = j.db.Update(func(txn *badger.Txn) error {
		for _, r := range keep {
			r.Turn, r.Group = 0, 0
			if err := txn.Set(recordKey(r.Seq), encodeRecord(nil, r)); err != nil {
				return err
			}
		}
		for _, t := range turns {
			if t.Num < top.Target {
				continue
			}
			if err := txn.Delete(turnKey(t.Num)); err != nil {
				return err
			}
		}
		for _, rb := range rbs {
			if err := txn.Delete(rollbackKey(rb.ID)); err != nil {
				return err
			}
			if err := txn.Delete(planKey(rb.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: settle rollbacks: %w", err)
	}
	if err := j.dropRecords(drop); err != nil {
		return nil, err
	}
	for _, r := range drop {
		if r.Aside != "" {
			asides = append(asides, r.Aside)
		}
	}
	return asides, nil
}

// AsideNames returns every aside name a record holds.
func (j *Journal) AsideNames() (map[string]bool, error) {
	names := map[string]bool{}
	err := j.Scan(0, 0, false, func(r *Record) error {
		if r.Aside != "" {
			names[r.Aside] = true
		}
		return nil
	})
	return names, err
}
