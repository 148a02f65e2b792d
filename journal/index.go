package journal

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// The index maps a chunk's hash to its location in a pack: key 'c'
// hash(32), value encodeLoc. References ('x' hash seq) say which
// records need the chunk; an entry lives while it has one.

// indexWriter adds index entries in as few transactions as Badger
// allows: when one grows too big it is committed and another begun, so
// a pre-image of any size is indexed with bounded memory.
type indexWriter struct {
	j   *Journal
	txn *badger.Txn
}

func (j *Journal) newIndexWriter() *indexWriter {
	return &indexWriter{j: j, txn: j.db.NewTransaction(true)}
}

// has reports whether chunk h is stored: committed, or added by this
// writer.
func (w *indexWriter) has(h [32]byte) (bool, error) {
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
func (w *indexWriter) set(h [32]byte, l loc) error {
	k, v := chunkKey(h), encodeLoc(l)
	err := w.txn.Set(k, v)
	if errors.Is(err, badger.ErrTxnTooBig) {
		if err = w.next(); err == nil {
			err = w.txn.Set(k, v)
		}
	}
	if err != nil {
		return fmt.Errorf("journal: index chunk: %w", err)
	}
	return nil
}

// next commits what was added and begins a new transaction.
func (w *indexWriter) next() error {
	if err := w.txn.Commit(); err != nil {
		return err
	}
	w.txn = w.j.db.NewTransaction(true)
	return nil
}

// commit commits what was added.
func (w *indexWriter) commit() error {
	if err := w.txn.Commit(); err != nil {
		return fmt.Errorf("journal: commit chunk index: %w", err)
	}
	return nil
}

// discard drops what was not committed.
func (w *indexWriter) discard() { w.txn.Discard() }
