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

// Settle makes the pending rollbacks final, as the next turn begins:
// the turns they reverted are forgotten with every record they undid
// and their own records; records they skipped stay, as changes outside
// a turn (they are still in effect, and no turn owns them). For a
// record several rollbacks covered, the latest decides.
//
// It returns the aside names the forgotten records held, for the
// caller to free when it likes: a rollback of a large tree keeps
// thousands, and unlinking them should not hold up the turn that
// begins. The records go first, so a crash before the names are freed
// leaves entries no record names, which the daemon sweeps at start
// (aside.Area.Sweep); never a record naming an entry that is gone.
func (j *Journal) Settle() (asides []string, err error) {
	rbs, err := j.Rollbacks()
	if err != nil || len(rbs) == 0 {
		return nil, err
	}
	decided := map[uint64]bool{}
	var drop, keep []*Record
	var turns []uint64
	for i := len(rbs) - 1; i >= 0; i-- {
		rb := rbs[i]
		if rb.State != RollbackDone {
			return nil, fmt.Errorf("journal: rollback %d is %s; finish it first", rb.ID, rb.State)
		}
		skipped := map[uint64]bool{}
		for _, s := range rb.Skipped {
			skipped[s] = true
		}
		err := j.Scan(rb.From, 0, false, func(r *Record) error {
			switch {
			case decided[r.Seq]:
			case r.Seq < rb.To && skipped[r.Seq]:
				keep = append(keep, r)
			case r.Seq < rb.To || r.Group == rb.ID:
				drop = append(drop, r)
			default:
				return nil
			}
			decided[r.Seq] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
		turns = append(turns, rb.Reverted...)
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
		for _, n := range turns {
			if err := txn.Delete(turnKey(n)); err != nil {
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
