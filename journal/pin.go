package journal

import "github.com/dgraph-io/badger/v4"

// Reading the past while changes go on. What a path held at an earlier
// time is its object's content today with the pre-images of the
// records since then put back, newest first (package rollback). A
// reader that copies content for long (a diff of many files, a large
// file shown as it was) need not keep changes out meanwhile: a change
// journals its pre-image before it proceeds, so the records from the
// earlier time up to the end of the copy describe every change the
// copy can have seen. Two things must hold for that:
//
//   - The records stay. Pruning and settling delete records (and free
//     the aside entries and chunks they name) only while no Pin is
//     held: a pin is a read lock on the records, taken under the
//     exclusive gate, so its holder sees the journal at one sequence
//     number and keeps everything from there on until it lets go.
//   - The earlier time is the start of an epoch that has ended, or of
//     the open one: within an epoch only an inode's first change
//     journals a pre-image, so the state at a point inside the open
//     epoch is lost as soon as a later change to the same bytes
//     proceeds. Pin.EpochSeq says where the open epoch began.

// A Pin holds the journal's records as they were when it was taken.
type Pin struct {
	j *Journal
	// Seq is the sequence number of the next record when the pin was
	// taken: every record below it was appended, and its change made.
	Seq uint64
	// EpochSeq is where the epoch open then began: a state at or
	// before it can be rebuilt from the records whatever changes
	// later; one after it only while the objects it concerns stay
	// unchanged.
	EpochSeq uint64
}

// Pin waits for changes in flight to finish, keeps new ones out as
// Exclusive does, and pins the records: the gate is the caller's to
// leave once it has read what it needs of the present (a lookup, a
// stat), the pin to release once it has copied what it needs of the
// past. A pin does not keep changes out; it keeps records in: a prune
// or settle that would delete records waits for every pin to be
// released. The pin must be released before the gate is taken again.
func (j *Journal) Pin() (Gate, *Pin) {
	for {
		j.gate.Lock()
		// Gate first, then pin, as pruning takes them (a prune for
		// space runs under a change's gate); but a deletion under way
		// is waited for with the gate left, so changes go on.
		if j.kept.TryRLock() {
			return Gate{j: j, Epoch: j.epoch, exclusive: true}, &Pin{j: j, Seq: j.nextSeq.Load(), EpochSeq: j.epochSeq}
		}
		j.gate.Unlock()
		j.kept.RLock()
		j.kept.RUnlock()
	}
}

// Release lets go of the records.
func (p *Pin) Release() {
	if p.j != nil {
		p.j.kept.RUnlock()
		p.j = nil
	}
}

// deleting holds off pins while records are deleted.
func (j *Journal) deleting() func() {
	j.kept.Lock()
	return j.kept.Unlock
}

// Records calls fn with each record of seqs, which must be in
// descending order (as a run of undo applies them), through one
// iterator: a record a lookup apiece would cost a transaction and a
// search of every table each. A number the journal holds no record
// for (a record discarded because its change failed) is passed over.
func (j *Journal) Records(seqs []uint64, fn func(*Record) error) error {
	if len(seqs) == 0 {
		return nil
	}
	return j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: []byte{prefixRecord}})
		defer it.Close()
		for n, seq := range seqs {
			if n%trimScanEvery == trimScanEvery-1 {
				j.trimMapped()
			}
			it.Seek(recordKey(seq))
			if !it.Valid() {
				return nil // nothing at or below seq
			}
			if keyNum(it.Item().Key()) != seq {
				continue
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
