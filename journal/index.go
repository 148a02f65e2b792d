package journal

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/cowfs/cowfs/journal/pack"
	"github.com/cowfs/cowfs/journal/wal"
)

// The index maps a chunk's hash to its location in a pack: key 'c'
// hash(32), value pack.Loc.Encode. References ('x' hash seq) say which
// records need the chunk; an entry lives while it has one.

// indexWriter collects the index entries of the chunks one record
// stores, for the record's entry in the record log (Append). A chunk is
// stored if this writer added it, or a logged record that Badger may
// not have yet does (wal.Log.Pending), or Badger has its entry.
type indexWriter struct {
	j     *Journal
	added map[[32]byte]bool
	ops   []wal.Op
}

func (j *Journal) newIndexWriter() *indexWriter { return &indexWriter{j: j} }

// has reports whether chunk h is stored. The log is asked first, then
// Badger afresh (raw: a lookup does not wait for the log to be
// applied): the log lets go of an entry only once Badger has it, so an
// entry is never missed between the two — a snapshot of Badger taken
// before the log let go of it would miss it. The chunk filter answers
// first for nearly every new chunk (pack.Filter), the chunks found before
// for old ones (present.go).
func (w *indexWriter) has(h [32]byte) (bool, error) {
	if w.added[h] {
		return true, nil
	}
	k := chunkKeyOf(h)
	if _, ok := w.j.wal.Pending(k[:]); ok {
		return true, nil
	}
	if !w.j.chunks.MayHold(h) {
		return false, nil // pack.Filter
	}
	if w.j.present.has(h) {
		return true, nil // present.go
	}
	err := w.j.db.DB.View(func(txn *badger.Txn) error {
		_, err := txn.Get(chunkKey(h))
		return err
	})
	switch {
	case err == nil:
		w.j.present.add(h)
		return true, nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("journal: look up chunk: %w", err)
	}
}

// set adds the entry of chunk h.
func (w *indexWriter) set(h [32]byte, l pack.Loc) {
	if w.added == nil {
		w.added = map[[32]byte]bool{}
	}
	w.added[h] = true
	w.j.chunks.Add(h)
	w.ops = append(w.ops, wal.Op{Key: chunkKey(h), Val: l.Encode(), Lookup: true})
}
