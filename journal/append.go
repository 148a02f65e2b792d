package journal

import (
	"fmt"
	"io"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/cowfs/cowfs/journal/wal"
	"github.com/cowfs/cowfs/sparse"
)

// Append journals rec as a change made under g. For a KindData record,
// src supplies the pre-image: the bytes [rec.Off, rec.Off+rec.Len) are
// read from it and stored, but for its holes, which are listed in
// rec.Holes (holes.go); if src turns out shorter, rec.Len shrinks to
// what it held. Append assigns rec.Seq, rec.Turn and, if zero,
// rec.Time.
//
// When Append returns nil the record and its content are durable: the
// content written to its pack, the record, its chunk references and
// the index entries of the chunks it stored written to the record log
// (package wal) — in the kernel's page cache at least, so they survive the
// daemon being killed, and on disk with Options.Sync. The caller may
// then perform the operation. If Append fails, the caller must not
// perform it.
func (j *Journal) Append(g Gate, rec *Record, src io.ReaderAt) error {
	if err := j.usable(); err != nil {
		return err
	}
	content := rec.Kind == KindData && src != nil
	var ext []sparse.Extent
	var end int64
	if content {
		var err error
		if ext, end, err = j.findData(g, rec, src); err != nil {
			return err
		}
	} else if err := j.room(g, need(rec, 0)); err != nil {
		return err
	}
	j.content.RLock()
	defer j.content.RUnlock()

	var index []wal.Op
	if content {
		chunks, stored, ix, stop, err := j.storeContent(src, ext)
		if err != nil {
			return err
		}
		if stop >= 0 {
			end, ext = stop, clip(ext, stop)
		}
		rec.Chunks, rec.Stored, index = chunks, stored, ix
		rec.Len = end - rec.Off
		rec.Holes = holesOf(ext, rec.Off, end)
	}
	rec.Turn = g.Turn
	if rec.Step == "" {
		rec.Step = g.Step
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	err := j.logged(func() ([]wal.Op, error) {
		// Numbered under the log's lock: records are logged, and so
		// reach Badger and followers, in sequence order.
		rec.Seq = j.nextSeq.Add(1) - 1
		val := encodeRecord(nil, rec)
		rec.Stored += int64(len(val) + 9)
		val = encodeRecord(val[:0], rec)
		ops := append(index, wal.Op{Key: recordKey(rec.Seq), Val: val})
		for _, c := range rec.Chunks {
			ops = append(ops, wal.Op{Key: refKey(c.Hash, rec.Seq)})
		}
		return ops, nil
	})
	if err != nil {
		return fmt.Errorf("journal: record: %w", err)
	}
	j.used.Add(rec.Stored)
	j.wake()
	return nil
}

// Record returns the record with sequence seq.
func (j *Journal) Record(seq uint64) (*Record, error) {
	if j.lookups.Add(1)%trimScanEvery == 0 {
		j.trimMapped() // a rollback looks up a record per step, all over the tables
	}
	var rec *Record
	err := j.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(recordKey(seq))
		if err != nil {
			return err
		}
		rec, err = itemRecord(item, seq)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("journal: record %d: %w", seq, err)
	}
	return rec, nil
}

// Discard deletes a record whose operation failed after it was
// appended, so it does not describe a change that never happened. A
// failure here is harmless: undoing a change that did not happen finds
// things already as the record says they were. Chunks left with no
// reference are deleted by the next prune, or at open.
func (j *Journal) Discard(rec *Record) error {
	if err := j.usable(); err != nil {
		return err
	}
	err := j.logged(func() ([]wal.Op, error) {
		ops := []wal.Op{{Delete: true, Key: recordKey(rec.Seq)}}
		for _, c := range rec.Chunks {
			ops = append(ops, wal.Op{Delete: true, Key: refKey(c.Hash, rec.Seq)})
		}
		return ops, nil
	})
	if err != nil {
		return fmt.Errorf("journal: discard record: %w", err)
	}
	return nil
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
		for n := 1; it.Valid(); it.Next() {
			seq := keyNum(it.Item().Key())
			if seq < from || seq >= to {
				break
			}
			if n++; n%trimScanEvery == 0 {
				j.trimMapped() // a long scan reads the tables faster than the trimmer's tick
			}
			rec, err := itemRecord(it.Item(), seq)
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

// itemRecord decodes record seq from its Badger item.
func itemRecord(item *badger.Item, seq uint64) (*Record, error) {
	var rec *Record
	err := item.Value(func(v []byte) error {
		var err error
		rec, err = decodeRecord(seq, v)
		return err
	})
	return rec, err
}
