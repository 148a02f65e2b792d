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
// range: it undid them too). Records before its range are untouched:
// their turns are live, even if a rollback lower in the stack had
// reverted them.
//
// Records it skipped stay as they are (see Kept): they are still in
// effect, and a rollback that covers them tries them again (the dsh
// design's rule: skipped records are kept and retried next time). One
// skipped for a failure or for what its path held is undone once the
// cause is gone; one skipped because a change outside the rolled-back
// turns touched the same file stays in conflict with that change, which
// stays in the journal too, for as long as the change is in effect.
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
	settling := false
	for i := range rbs {
		switch rbs[i].State {
		case RollbackDone:
		case RollbackSettling:
			settling = true // a settle that stopped: go on with it
		case RollbackPartial:
			return nil, partialError(&rbs[i])
		default:
			return nil, fmt.Errorf("journal: rollback %d is %s; finish it first", rbs[i].ID, rbs[i].State)
		}
	}
	if !settling {
		// From here on the stack is final: it cannot be unreverted
		// (its records are going), and a crash is finished when the
		// journal opens.
		err := j.db.Update(func(txn *badger.Txn) error {
			for i := range rbs {
				rbs[i].State = RollbackSettling
				if err := putRollback(txn, &rbs[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("journal: settle rollbacks: %w", err)
		}
	}
	return j.finishSettle(rbs)
}

// finishSettle does Settle's work on a stack marked settling, batch by
// batch, so that a turn of 150,000 records is forgotten in bounded
// memory; run again after a crash, it finds what it did done. The turns
// and rollbacks go last, once no record of theirs is left but those
// kept.
func (j *Journal) finishSettle(rbs []Rollback) (asides []string, err error) {
	top := rbs[len(rbs)-1]
	skipped := make(map[uint64]bool, len(top.Skipped))
	for _, s := range top.Skipped {
		skipped[s] = true
	}
	kept := func(r *Record) bool { return r.Seq < top.To && skipped[r.Seq] }
	// Pins wait until the records and their turns are gone alike: a
	// reader never finds a turn without its records.
	done := j.deleting()
	defer done()
	err = j.scanBatches(top.From, 0, func(r *Record) bool { return !kept(r) && (r.Seq < top.To || r.Group == top.ID) },
		func(drop []*Record) error {
			for _, r := range drop {
				if r.Aside != "" {
					asides = append(asides, r.Aside)
				}
			}
			return j.dropRecords(drop)
		})
	if err != nil {
		return nil, fmt.Errorf("journal: settle rollbacks: %w", err)
	}
	turns, err := j.Turns()
	if err != nil {
		return nil, err
	}
	err = j.db.Update(func(txn *badger.Txn) error {
		for _, t := range turns {
			if t.Num < top.Target {
				continue
			}
			if err := txn.Delete(turnKey(t.Num)); err != nil {
				return err
			}
		}
		for i := range rbs {
			if err := deleteRollback(txn, &rbs[i]); err != nil {
				return err
			}
		}
		// The top's marker stays, and those before it; the markers it
		// superseded go for good.
		return dropSuperseded(txn)
	})
	if err != nil {
		return nil, fmt.Errorf("journal: settle rollbacks: %w", err)
	}
	return asides, nil
}

// finishSettling finishes, at open, a settle a crash interrupted. The
// aside entries its records named are left to the daemon's sweep.
func (j *Journal) finishSettling() error {
	rbs, err := j.Rollbacks()
	if err != nil {
		return err
	}
	for _, r := range rbs {
		if r.State == RollbackSettling {
			j.log.Info("journal: finishing forgetting rolled-back turns, which a crash interrupted", "rollback", r.ID)
			_, err := j.finishSettle(rbs)
			return err
		}
	}
	return nil
}

// CheckSettled fails with ErrBusy while rolled-back turns are being
// forgotten: a turn began and settling them stopped at an error. The
// next turn to begin finishes it.
func (j *Journal) CheckSettled() error {
	rbs, err := j.Rollbacks()
	if err != nil {
		return err
	}
	for _, r := range rbs {
		if r.State == RollbackSettling {
			return fmt.Errorf("%w: the turns rollback %d reverted are being forgotten, which stopped at an error; begin a turn to finish it", ErrBusy, r.ID)
		}
	}
	return nil
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

// Kept tells the records Settle kept — changes of forgotten turns, and
// undo records of forgotten rollbacks, that the top rollback skipped
// and that stay in effect — from the rest.
type Kept struct{ turns, rollbacks map[uint64]bool }

// Kept returns what tells kept records now: the turns and rollbacks the
// journal holds.
func (j *Journal) Kept() (Kept, error) {
	k := Kept{turns: map[uint64]bool{}, rollbacks: map[uint64]bool{}}
	ts, err := j.Turns()
	if err != nil {
		return k, err
	}
	for _, t := range ts {
		k.turns[t.Num] = true
	}
	rbs, err := j.Rollbacks()
	if err != nil {
		return k, err
	}
	for _, r := range rbs {
		k.rollbacks[r.ID] = true
	}
	return k, nil
}

// Is reports whether a record of turn and group (Record.Turn, .Group)
// was kept: its turn or its rollback is forgotten, it is not.
func (k Kept) Is(turn, group uint64) bool {
	return turn != 0 && !k.turns[turn] || group != 0 && !k.rollbacks[group]
}
