package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Rollback states.
const (
	RollbackRunning     = "running"     // planned and started; resumed after a crash
	RollbackDone        = "done"        // the workspace is at the target; can be unreverted
	RollbackPartial     = "partial"     // stopped at a step that failed; retried or unreverted
	RollbackUnreverting = "unreverting" // being undone; resumed after a crash
	RollbackSettling    = "settling"    // made final as a turn begins; finished after a crash (settle.go)
)

// ErrPartial: a rollback stopped at a step that failed (no space, an I/O
// error) and waits to be retried or undone; nothing else that changes
// history may happen meanwhile.
var ErrPartial = errors.New("a rollback did not finish")

// Rollback is one rollback (or its undoing) as the journal keeps it:
// enough to finish it after a crash, to undo it, and, when the next
// turn begins, to forget the turns it reverted.
//
// The rollbacks done since the last turn began form a stack (by ID):
// a rollback pushes, an unrevert pops. The workspace sits before the
// target of the top one, whatever came before — so a rollback to a later
// turn after one to an earlier turn brings the turns in between back —
// and turn states and markers are worked out from the stack each time
// it changes (restack), never patched one rollback at a time.
type Rollback struct {
	ID     uint64 `json:"id"`
	Target uint64 `json:"target"` // rolled back to before this turn
	Force  bool   `json:"force,omitempty"`
	State  string `json:"state"`

	// The records it undoes: From <= seq < To.
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	// Records it did not undo (conflicts, failures), which stay in
	// effect in the workspace. Stored apart from the record, in
	// SkippedBlob; only a record of format 2 holds them itself.
	Skipped []uint64 `json:"skipped,omitempty"`
	// The turns that were live when it began and it reverted.
	Reverted []uint64 `json:"reverted"`
	// Marker is the marker it leaves (done rollbacks).
	Marker *Marker `json:"marker,omitempty"`

	// A partial rollback resumes at plan step Next; Failure says why it
	// stopped. Run counts the runs of plans it made (its own, then its
	// unrevert's), so that progress saved for one run (progress.go) is
	// never taken for another's.
	Next    int    `json:"next,omitempty"`
	Run     uint64 `json:"run,omitempty"`
	Failure string `json:"failure,omitempty"`

	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`

	// Where its plan and Skipped are stored (blob.go); zero for a
	// rollback stored in format 2, whose plan is one value.
	PlanBlob    blobRef `json:"plan_blob,omitzero"`
	SkippedBlob blobRef `json:"skipped_blob,omitzero"`
}

// NewRollback stores r (assigning its ID) with its plan, in state
// running. The caller holds the gate exclusively.
func (j *Journal) NewRollback(r *Rollback, plan PlanWriter) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var c counters
	if err := j.db.View(func(txn *badger.Txn) error {
		_, err := getJSON(txn, countersKey, &c)
		return err
	}); err != nil {
		return fmt.Errorf("journal: new rollback: %w", err)
	}
	c.NextRollback = max(c.NextRollback, 1)
	r.ID = c.NextRollback
	c.NextRollback++
	c.NextTurn = j.nextTurn
	r.State, r.Run, r.Next = RollbackRunning, 1, 0
	r.PlanBlob, r.SkippedBlob = blobRef{}, blobRef{}
	// The plan's parts first: a crash before the record leaves parts
	// of a rollback that does not exist, which Open deletes; the next
	// rollback takes the same id.
	if _, err := j.storeBlobs(r, plan); err != nil {
		return err
	}
	return j.db.Update(func(txn *badger.Txn) error {
		if err := setJSON(txn, countersKey, c); err != nil {
			return err
		}
		return putRollback(txn, r)
	})
}

// SaveRollback stores r's new state; with a non-nil plan, its plan too.
func (j *Journal) SaveRollback(r *Rollback, plan PlanWriter) error {
	old, err := j.storeBlobs(r, plan)
	if err != nil {
		return err
	}
	if err := j.db.Update(func(txn *badger.Txn) error { return putRollback(txn, r) }); err != nil {
		return err
	}
	return j.dropBlobs(r.ID, old)
}

// FinishRollback records that r is done and leaves marker m: r goes on
// top of the stack, and turn states and markers follow. m supersedes the
// markers standing at or after its turn, which it lists (Replaces);
// r.Marker is m as it is kept.
func (j *Journal) FinishRollback(r *Rollback, m Marker) error {
	old, err := j.storeBlobs(r, nil)
	if err != nil {
		return err
	}
	err = j.db.Update(func(txn *badger.Txn) error {
		reps, err := replaced(txn, m.Turn)
		if err != nil {
			return err
		}
		m.Replaces = reps
		r.State, r.Marker, r.Next, r.Failure = RollbackDone, &m, 0, ""
		if err := putRollback(txn, r); err != nil {
			return err
		}
		return restack(txn, nil)
	})
	if err != nil {
		return err
	}
	return j.dropBlobs(r.ID, old)
}

// putRollback sets r's record: all of it but Skipped, which is in its
// blob.
func putRollback(txn *badger.Txn, r *Rollback) error {
	c := *r
	c.Skipped = nil
	return setJSON(txn, rollbackKey(r.ID), &c)
}

// blobOf is one stored blob of a rollback.
type blobOf struct {
	kind byte
	ref  blobRef
}

// storeBlobs stores, as new versions named in r, plan if it is given
// and r.Skipped if it is not what is stored. It returns the versions
// they replace, for dropBlobs once r's record names the new ones.
func (j *Journal) storeBlobs(r *Rollback, plan PlanWriter) ([]blobOf, error) {
	var old []blobOf
	if plan != nil {
		ref, err := j.putBlobFrom(r.ID, blobPlan, r.PlanBlob.Version+1, plan)
		if err != nil {
			return nil, err
		}
		old = append(old, blobOf{blobPlan, r.PlanBlob})
		r.PlanBlob = ref
	}
	if r.SkippedBlob.Items != len(r.Skipped) || !r.SkippedBlob.stored() {
		ref, err := j.putBlob(r.ID, blobSkipped, r.SkippedBlob.Version+1, encodeSeqs(r.Skipped))
		if err != nil {
			return nil, err
		}
		ref.Items = len(r.Skipped)
		old = append(old, blobOf{blobSkipped, r.SkippedBlob})
		r.SkippedBlob = ref
	}
	return old, nil
}

// dropBlobs deletes replaced versions of rollback id's blobs. A crash
// before leaves them to Open's sweep.
func (j *Journal) dropBlobs(id uint64, old []blobOf) error {
	return j.db.Update(func(txn *badger.Txn) error {
		for _, b := range old {
			if err := deleteBlob(txn, id, b.kind, b.ref); err != nil {
				return err
			}
			if !b.ref.stored() && b.kind == blobPlan {
				if err := txn.Delete(planKey(id)); err != nil { // format 2
					return err
				}
			}
		}
		return nil
	})
}

// deleteRollback deletes rollback r's record and what it stores.
func deleteRollback(txn *badger.Txn, r *Rollback) error {
	if err := txn.Delete(rollbackKey(r.ID)); err != nil {
		return err
	}
	if err := txn.Delete(planKey(r.ID)); err != nil { // format 2
		return err
	}
	if err := deleteBlob(txn, r.ID, blobPlan, r.PlanBlob); err != nil {
		return err
	}
	return deleteBlob(txn, r.ID, blobSkipped, r.SkippedBlob)
}

// RollbackPlan returns the plan stored with rollback id.
func (j *Journal) RollbackPlan(id uint64) ([]byte, error) {
	var out []byte
	err := j.db.View(func(txn *badger.Txn) error {
		var r Rollback
		ok, err := getJSON(txn, rollbackKey(id), &r)
		if err != nil {
			return err
		}
		if ok && r.PlanBlob.stored() {
			out, err = j.getBlob(txn, id, blobPlan, r.PlanBlob)
			return err
		}
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
// done (and so undoable until the next turn), a partial one, and those a
// crash interrupted.
func (j *Journal) Rollbacks() ([]Rollback, error) {
	var rs []Rollback
	err := j.db.View(func(txn *badger.Txn) (err error) {
		if rs, err = rollbacks(txn); err != nil {
			return err
		}
		for i := range rs {
			r := &rs[i]
			j.applyProgress(r)
			if !r.SkippedBlob.stored() || r.SkippedBlob.Items == 0 {
				continue // none, or format 2: in the record
			}
			b, err := j.getBlob(txn, r.ID, blobSkipped, r.SkippedBlob)
			if err == nil {
				r.Skipped, err = decodeSeqs(b)
			}
			if err != nil {
				return fmt.Errorf("%w: records rollback %d skipped: %v", ErrCorrupt, r.ID, err)
			}
		}
		return nil
	})
	return rs, err
}

func rollbacks(txn *badger.Txn) ([]Rollback, error) {
	var rs []Rollback
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixRollback}})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var r Rollback
		if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &r) }); err != nil {
			return nil, fmt.Errorf("%w: rollback: %v", ErrCorrupt, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// Unreverted forgets rollback r after it was undone: its records
// (group r.ID) are deleted, dropAside freeing the aside entries they
// name, and it leaves the stack (turn states and markers follow what is
// left).
//
// The records go first, batch by batch, while r is still stored as
// unreverting: a crash in between is finished at the next start
// (rollback.Resume finds every step done and comes back here). Never
// the other way round: records of a group whose rollback is gone would
// look like changes a later rollback must undo.
func (j *Journal) Unreverted(r *Rollback, dropAside func(string) error) error {
	// Pins wait until the records and the rollback are gone alike.
	done := j.deleting()
	defer done()
	err := j.scanBatches(r.To, 0, func(rec *Record) bool { return rec.Group == r.ID }, func(group []*Record) error {
		return j.forget(group, dropAside)
	})
	if err != nil {
		return fmt.Errorf("journal: unrevert %d: %w", r.ID, err)
	}
	err = j.db.Update(func(txn *badger.Txn) error {
		if err := deleteRollback(txn, r); err != nil {
			return err
		}
		return restack(txn, r)
	})
	if err != nil {
		return fmt.Errorf("journal: unrevert %d: %w", r.ID, err)
	}
	return nil
}

// restack makes turn states and markers agree with the stack of done
// rollbacks: the workspace sits before the top one's target, so exactly
// the turns from there on are reverted (by it), and the marker of the
// top stands, with the settled markers before its target
// (placeMarkers). gone is a rollback just taken off the stack, whose
// marker goes.
//
// Markers of turns forgotten earlier are not deleted: a stack's targets
// are turns still in the journal, and turn numbers are never reused.
func restack(txn *badger.Txn, gone *Rollback) error {
	rbs, err := rollbacks(txn)
	if err != nil {
		return err
	}
	var stack []Rollback
	for _, r := range rbs {
		if r.State == RollbackDone {
			stack = append(stack, r)
		}
	}
	// Turns.
	var top *Rollback
	if len(stack) > 0 {
		top = &stack[len(stack)-1]
	}
	turns, err := turnsIn(txn)
	if err != nil {
		return err
	}
	for _, t := range turns {
		want := uint64(0)
		if top != nil && t.Num >= top.Target {
			want = top.ID
		}
		if t.RevertedBy != want {
			t.RevertedBy = want
			if err := setJSON(txn, turnKey(t.Num), t); err != nil {
				return err
			}
		}
	}
	return placeMarkers(txn, stack, gone)
}

// Partial returns the rollback that stopped at a failed step, if one
// waits to be retried or undone.
func (j *Journal) Partial() (*Rollback, error) {
	rbs, err := j.Rollbacks()
	if err != nil {
		return nil, err
	}
	for i := range rbs {
		if rbs[i].State == RollbackPartial {
			return &rbs[i], nil
		}
	}
	return nil, nil
}

// partialError says that rollback r waits, and what to do about it.
func partialError(r *Rollback) error {
	return fmt.Errorf("%w: rollback %d to before turn %d stopped at a step that failed (%s); "+
		"retry it (cowfs rollback %d) once the cause is gone, or undo what it did (cowfs unrevert)",
		ErrPartial, r.ID, r.Target, r.Failure, r.Target)
}

// CheckNoPartial fails with ErrPartial if a rollback waits to be retried
// or undone.
func (j *Journal) CheckNoPartial() error {
	r, err := j.Partial()
	if err != nil {
		return err
	}
	if r != nil {
		return partialError(r)
	}
	return nil
}
