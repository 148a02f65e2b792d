package journal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/cowfs/cowfs/journal/wal"
)

// The record log (package wal) is how Append, Discard and events make a
// record durable before its change proceeds; this file is what the
// journal gives it: Badger to apply to, and what its errors mean here.

// walMarkKey is Badger's note of how far the log is applied:
// generation and offset, big-endian (docs/journal-format.md).
var walMarkKey = []byte{prefixLogMark}

// logStore is Badger as the record log applies to it: raw, since the
// log's own writes never wait for the log (store.go).
type logStore struct{ db *badger.DB }

// Write applies ops to Badger, in order, in as many transactions as it
// takes.
func (s logStore) Write(ops []wal.Op) error {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, op := range ops {
		var err error
		if op.Delete {
			err = wb.Delete(op.Key)
		} else {
			err = wb.Set(op.Key, op.Val)
		}
		if err != nil {
			return fmt.Errorf("journal: apply the record log: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		if errors.Is(err, badger.ErrDBClosed) {
			return ErrClosed
		}
		return fmt.Errorf("journal: apply the record log: %w", err)
	}
	return nil
}

// Mark returns Badger's note of how far the log is applied.
func (s logStore) Mark() (wal.Mark, error) {
	var m wal.Mark
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(walMarkKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 16 {
				return fmt.Errorf("%w: log mark of %d bytes", ErrCorrupt, len(v))
			}
			m = wal.Mark{Gen: binary.BigEndian.Uint64(v), Off: int64(binary.BigEndian.Uint64(v[8:]))}
			return nil
		})
	})
	if err != nil {
		return wal.Mark{}, fmt.Errorf("journal: record log: %w", err)
	}
	return m, nil
}

// SetMark notes in Badger how far the log is applied.
func (s logStore) SetMark(m wal.Mark) error {
	v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, m.Gen), uint64(m.Off))
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(walMarkKey, v) }); err != nil {
		if errors.Is(err, badger.ErrDBClosed) {
			return ErrClosed
		}
		return fmt.Errorf("journal: note the record log applied: %w", err)
	}
	return nil
}

// logged writes one entry to the record log (wal.Log.Append). A log
// that takes no more entries makes the journal unusable: no change
// that needs a record may proceed.
func (j *Journal) logged(build func() ([]wal.Op, error)) error {
	err := j.wal.Append(build)
	if errors.Is(err, wal.ErrBroken) {
		return fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	return err
}

// refused is told of every write error of the record log; one that
// says the filesystem takes no more writes makes the journal unusable
// (health.go).
func (j *Journal) refused(err error) {
	if refusal(err) {
		j.fail(err)
	}
}
