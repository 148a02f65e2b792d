package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Rollback states.
const (
	RollbackRunning     = "running"     // planned and started; resumed after a crash
	RollbackDone        = "done"        // the workspace is at the target; can be unreverted
	RollbackUnreverting = "unreverting" // being undone; resumed after a crash
)

// Rollback is one rollback (or its undoing) as the journal keeps it:
// enough to finish it after a crash, to undo it, and, when the next
// turn begins, to forget the turns it reverted.
type Rollback struct {
	ID     uint64 `json:"id"`
	Target uint64 `json:"target"` // rolled back to before this turn
	Force  bool   `json:"force,omitempty"`
	State  string `json:"state"`

	// The records it undoes: From <= seq < To.
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	// Records it did not undo (conflicts, failures), which stay in
	// effect in the workspace.
	Skipped []uint64 `json:"skipped,omitempty"`
	// The turns it reverted.
	Reverted []uint64 `json:"reverted"`
	// The marker it replaced, put back if it is undone.
	Replaced *Marker `json:"replaced,omitempty"`

	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
}

// NewRollback stores r (assigning its ID) with its plan, in state
// running, and marks the turns it reverts. The caller holds the gate
// exclusively.
func (j *Journal) NewRollback(r *Rollback, plan []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.db.Update(func(txn *badger.Txn) error {
		var c counters
		if _, err := getJSON(txn, countersKey, &c); err != nil {
			return err
		}
		c.NextRollback = max(c.NextRollback, 1)
		r.ID = c.NextRollback
		c.NextRollback++
		c.NextTurn = j.nextTurn
		r.State = RollbackRunning
		if err := setJSON(txn, countersKey, c); err != nil {
			return err
		}
		if err := setJSON(txn, rollbackKey(r.ID), r); err != nil {
			return err
		}
		return txn.Set(planKey(r.ID), plan)
	})
}

// SaveRollback stores r's new state; with a non-nil plan, its plan too.
func (j *Journal) SaveRollback(r *Rollback, plan []byte) error {
	return j.db.Update(func(txn *badger.Txn) error {
		if plan != nil {
			if err := txn.Set(planKey(r.ID), plan); err != nil {
				return err
			}
		}
		return setJSON(txn, rollbackKey(r.ID), r)
	})
}

// FinishRollback records that r is done: the reverted turns are marked,
// and the marker m replaces any marker of its turn.
func (j *Journal) FinishRollback(r *Rollback, m Marker) error {
	return j.db.Update(func(txn *badger.Txn) error {
		var old Marker
		if ok, err := getJSON(txn, markerKey(m.Turn), &old); err != nil {
			return err
		} else if ok {
			r.Replaced = &old
		}
		r.State = RollbackDone
		for _, n := range r.Reverted {
			t, err := getTurn(txn, n)
			if err != nil {
				return err
			}
			t.RevertedBy = r.ID
			if err := setJSON(txn, turnKey(n), t); err != nil {
				return err
			}
		}
		if err := setJSON(txn, markerKey(m.Turn), m); err != nil {
			return err
		}
		return setJSON(txn, rollbackKey(r.ID), r)
	})
}

// RollbackPlan returns the plan stored with rollback id.
func (j *Journal) RollbackPlan(id uint64) ([]byte, error) {
	var out []byte
	err := j.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(planKey(id))
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("journal: plan of rollback %d: %w", id, err)
	}
	return out, nil
}

// Rollbacks returns the rollbacks not yet forgotten, oldest first: those
// done (and so undoable until the next turn) and those a crash
// interrupted.
func (j *Journal) Rollbacks() ([]Rollback, error) {
	var rs []Rollback
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixRollback}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var r Rollback
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &r) }); err != nil {
				return fmt.Errorf("%w: rollback: %v", ErrCorrupt, err)
			}
			rs = append(rs, r)
		}
		return nil
	})
	return rs, err
}

// Unreverted forgets rollback r after it was undone: the turns it
// reverted are live again, its records (group r.ID) are deleted, and
// its marker is withdrawn (the one it replaced, if any, comes back).
// dropAside frees the aside entries its records name.
func (j *Journal) Unreverted(r *Rollback, dropAside func(string) error) error {
	var group []*Record
	err := j.Scan(r.To, 0, false, func(rec *Record) error {
		if rec.Group == r.ID {
			group = append(group, rec)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = j.db.Update(func(txn *badger.Txn) error {
		for _, n := range r.Reverted {
			t, err := getTurn(txn, n)
			if err != nil {
				continue
			}
			t.RevertedBy = 0
			if err := setJSON(txn, turnKey(n), t); err != nil {
				return err
			}
		}
		var m Marker
		if ok, err := getJSON(txn, markerKey(r.Target), &m); err != nil {
			return err
		} else if ok && m.Rollback == r.ID {
			if r.Replaced != nil {
				err = setJSON(txn, markerKey(r.Target), r.Replaced)
			} else {
				err = txn.Delete(markerKey(r.Target))
			}
			if err != nil {
				return err
			}
		}
		if err := txn.Delete(planKey(r.ID)); err != nil {
			return err
		}
		return txn.Delete(rollbackKey(r.ID))
	})
	if err != nil {
		return fmt.Errorf("journal: unrevert %d: %w", r.ID, err)
	}
	return j.forget(group, dropAside)
}
