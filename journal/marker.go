package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Marker is the conversation truncation marker a rollback leaves: the
// harness truncates its chat history at Anchor.
//
// There is one marker per conversation point: a rollback to before turn
// N supersedes every marker standing at N or after it, since the
// conversation from N's anchor on — their notes included — is what the
// harness cuts. Replaces lists them, so that a harness can tell the
// truncation that replaced an earlier one from a new one.
type Marker struct {
	Turn      uint64    `json:"turn"`
	ID        string    `json:"id,omitempty"`
	Anchor    string    `json:"anchor,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Note      string    `json:"note"`
	Rollback  uint64    `json:"rollback"` // the rollback that left it
	// Replaces are the markers that stood at or after Turn when it was
	// left, oldest turn first, each without its own Replaces.
	Replaces []Marker `json:"replaces,omitempty"`
}

// storedMarker is a marker as the journal keeps it (key 'k' turn).
//
// The key holds the marker of the top rollback of the stack, and the
// markers rollbacks left that a turn since made final ("settled"
// markers). A settled marker at or after the stack's top target is
// superseded while the stack stands: kept, hidden, so that unreverting
// the rollbacks above it puts it back as it was, and deleted when the
// stack is made final in turn (Settle). A settled marker's turn is
// forgotten, so its key is never that of a stacked rollback's target,
// which is a turn still in the journal.
type storedMarker struct {
	Marker
	Superseded bool `json:"superseded,omitempty"`
}

// Markers returns the markers that stand, oldest turn first.
func (j *Journal) Markers() ([]Marker, error) {
	var ms []Marker
	err := j.db.View(func(txn *badger.Txn) error {
		all, err := storedMarkers(txn)
		for _, m := range all {
			if !m.Superseded {
				ms = append(ms, m.Marker)
			}
		}
		return err
	})
	return ms, err
}

// storedMarkers returns every marker kept, superseded ones too, oldest
// turn first.
func storedMarkers(txn *badger.Txn) ([]storedMarker, error) {
	var ms []storedMarker
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixMarker}})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var m storedMarker
		if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &m) }); err != nil {
			return nil, fmt.Errorf("%w: marker: %v", ErrCorrupt, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// replaced returns the markers standing at or after turn n, as a new
// marker at n lists them (Replaces).
func replaced(txn *badger.Txn, n uint64) ([]Marker, error) {
	all, err := storedMarkers(txn)
	if err != nil {
		return nil, err
	}
	var out []Marker
	for _, m := range all {
		if !m.Superseded && m.Turn >= n {
			m.Replaces = nil
			out = append(out, m.Marker)
		}
	}
	return out, nil
}

// placeMarkers makes the markers kept agree with the stack of done
// rollbacks (oldest first); gone is a rollback just taken off it, or
// nil. The marker of the stack's top stands; those of the rollbacks below
// it do not — they were superseded when the rollbacks above them were
// made, or, for a rollback to a later turn than the one below, the
// conversation up to the later turn is back — and are not kept under 'k'
// (their rollbacks keep them, for when an unrevert makes one the top
// again). A settled marker stands unless the top's target is at or
// before its turn.
func placeMarkers(txn *badger.Txn, stack []Rollback, gone *Rollback) error {
	ofStack := map[uint64]bool{}
	for _, r := range stack {
		ofStack[r.ID] = true
	}
	if gone != nil {
		ofStack[gone.ID] = true
	}
	var top *Rollback
	if len(stack) > 0 {
		top = &stack[len(stack)-1]
	}
	all, err := storedMarkers(txn)
	if err != nil {
		return err
	}
	for _, m := range all {
		if ofStack[m.Rollback] {
			if err := txn.Delete(markerKey(m.Turn)); err != nil {
				return err
			}
			continue
		}
		if hide := top != nil && m.Turn >= top.Target; hide != m.Superseded {
			m.Superseded = hide
			if err := setJSON(txn, markerKey(m.Turn), m); err != nil {
				return err
			}
		}
	}
	if top != nil && top.Marker != nil {
		return setJSON(txn, markerKey(top.Marker.Turn), storedMarker{Marker: *top.Marker})
	}
	return nil
}

// dropSuperseded deletes the settled markers the stack superseded, as it
// is made final.
func dropSuperseded(txn *badger.Txn) error {
	all, err := storedMarkers(txn)
	if err != nil {
		return err
	}
	for _, m := range all {
		if m.Superseded {
			if err := txn.Delete(markerKey(m.Turn)); err != nil {
				return err
			}
		}
	}
	return nil
}
