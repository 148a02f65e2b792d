package journal

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// The index maps a chunk's hash to its location in a pack: key 'c'
// hash(32), value encodeLoc. References ('x' hash seq) say which
// records need the chunk; an entry lives while it has one.

// indexWriter collects the index entries of the chunks one record
// stores, for the record's entry in the record log (Append). A chunk is
// stored if Badger has its entry, or a logged record that Badger may
// not have yet does (recordLog.chunk), or this writer added it.
type indexWriter struct {
	j     *Journal
	txn   *badger.Txn // read-only, raw: lookups do not wait for the log to be applied
	added map[[32]byte]bool
	ops   []walOp
}

func (j *Journal) newIndexWriter() *indexWriter {
	return &indexWriter{j: j, txn: j.db.DB.NewTransaction(false)}
}

// has reports whether chunk h is stored.
func (w *indexWriter) has(h [32]byte) (bool, error) {
	if w.added[h] {
		return true, nil
	}
	if _, ok := w.j.wal.chunk(h); ok {
		return true, nil
	}
	_, err := w.txn.Get(chunkKey(h))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("journal: look up chunk: %w", err)
	}
}

// set adds the entry of chunk h.
func (w *indexWriter) set(h [32]byte, l loc) {
	if w.added == nil {
		w.added = map[[32]byte]bool{}
	}
	w.added[h] = true
	w.ops = append(w.ops, walOp{key: chunkKey(h), val: encodeLoc(l)})
}

// discard ends the lookups.
func (w *indexWriter) discard() { w.txn.Discard() }
