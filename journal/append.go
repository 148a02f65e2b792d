package journal

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Append journals rec as a change made under g. For a KindData record,
// src supplies the pre-image: the bytes [rec.Off, rec.Off+rec.Len) are
// read from it and stored; if src turns out shorter, rec.Len shrinks to
// what it held. Append assigns rec.Seq, rec.Turn and, if zero,
// rec.Time.
//
// When Append returns nil the record and its content are committed: in
// the kernel's page cache at least, so they survive the daemon being
// killed, and on disk with Options.Sync. The caller may then perform
// the operation. If Append fails, the caller must not perform it.
func (j *Journal) Append(g Gate, rec *Record, src io.ReaderAt) error {
	if err := j.usable(); err != nil {
		return err
	}
	if err := j.room(g, need(rec)); err != nil {
		return err
	}
	j.content.RLock()
	defer j.content.RUnlock()

	if rec.Kind == KindData && src != nil {
		chunks, stored, err := j.storeContent(src, rec.Off, rec.Len)
		if err != nil {
			return err
		}
		rec.Chunks = chunks
		rec.Stored = stored
		var n int64
		for _, c := range chunks {
			n += int64(c.Size)
		}
		rec.Len = n
	}
	rec.Turn = g.Turn
	if rec.Step == "" {
		rec.Step = g.Step
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	rec.Seq = j.nextSeq.Add(1) - 1
	val := encodeRecord(nil, rec)
	rec.Stored += int64(len(val) + 9)
	val = encodeRecord(val[:0], rec)

	if err := j.commitRecord(rec, val); err != nil {
		if errors.Is(err, badger.ErrDBClosed) {
			return ErrClosed
		}
		return fmt.Errorf("journal: commit record: %w", err)
	}
	j.used.Add(rec.Stored)
	j.wake()
	return nil
}

// commitRecord commits a record and its references to chunks, in one
// transaction if Badger takes it. A record with too many chunks for one
// has its references committed first, in batches: a crash before the
// record leaves references of a record that does not exist, which Open
// deletes (sweepOrphanChunks); never a record whose chunks may vanish.
func (j *Journal) commitRecord(rec *Record, val []byte) error {
	err := j.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(recordKey(rec.Seq), val); err != nil {
			return err
		}
		for _, c := range rec.Chunks {
			if err := txn.Set(refKey(c.Hash, rec.Seq), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	wb := j.db.NewWriteBatch()
	defer wb.Cancel()
	for _, c := range rec.Chunks {
		if err := wb.Set(refKey(c.Hash, rec.Seq), nil); err != nil {
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	return j.db.Update(func(txn *badger.Txn) error { return txn.Set(recordKey(rec.Seq), val) })
}

// Record returns the record with sequence seq.
func (j *Journal) Record(seq uint64) (*Record, error) {
	var rec *Record
	err := j.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(recordKey(seq))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			rec, err = decodeRecord(seq, v)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("journal: record %d: %w", seq, err)
	}
	return rec, nil
}

// Discard deletes a record whose operation failed after it was
// appended, so it does not describe a change that never happened. A
// failure here is harmless: undoing a change that did not happen finds
// things already as the record says they were.
func (j *Journal) Discard(rec *Record) error {
	if err := j.usable(); err != nil {
		return err
	}
	// The record goes first: a crash after it leaves references of a
	// record that does not exist, which Open deletes.
	if err := j.db.Update(func(txn *badger.Txn) error { return txn.Delete(recordKey(rec.Seq)) }); err != nil {
		return fmt.Errorf("journal: discard record: %w", err)
	}
	keys := make([][]byte, len(rec.Chunks))
	for i, c := range rec.Chunks {
		keys[i] = refKey(c.Hash, rec.Seq)
	}
	return j.deleteKeys(keys)
}

// Scan calls fn for every record with from <= seq < to, in sequence
// order (or reverse order if reverse is set). to == 0 means no upper
// bound. fn must not call back into the journal's write methods.
func (j *Journal) Scan(from, to uint64, reverse bool, fn func(*Record) error) error {
	if to == 0 {
		to = ^uint64(0)
	}
	return j.db.View(func(txn *badger.Txn) error {
		opts := badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 64, Reverse: reverse, Prefix: []byte{prefixRecord}}
		it := txn.NewIterator(opts)
		defer it.Close()
		if reverse {
			it.Seek(recordKey(to - 1))
		} else {
			it.Seek(recordKey(from))
		}
		for ; it.Valid(); it.Next() {
			seq := keyNum(it.Item().Key())
			if seq < from || seq >= to {
				break
			}
			var rec *Record
			err := it.Item().Value(func(v []byte) error {
				var err error
				rec, err = decodeRecord(seq, v)
				return err
			})
			if err != nil {
				return err
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		return nil
	})
}
