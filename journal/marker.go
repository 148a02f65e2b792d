package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Marker is the conversation truncation marker a rollback leaves: the
// harness truncates its chat history at Anchor.
type Marker struct {
	Turn      uint64    `json:"turn"`
	ID        string    `json:"id,omitempty"`
	Anchor    string    `json:"anchor,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Note      string    `json:"note"`
	Rollback  uint64    `json:"rollback"` // the rollback that left it
}

// Markers returns the rollback markers, oldest turn first.
func (j *Journal) Markers() ([]Marker, error) {
	var ms []Marker
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixMarker}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var m Marker
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &m) }); err != nil {
				return fmt.Errorf("%w: marker: %v", ErrCorrupt, err)
			}
			ms = append(ms, m)
		}
		return nil
	})
	return ms, err
}
