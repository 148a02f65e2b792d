package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Fingerprint is what package rescan last saw at a path in the backing
// directory: enough to tell, by one lstat, whether anything changed it
// since. Type 0 means nothing was there.
type Fingerprint struct {
	Type  uint32 // S_IFMT bits
	Mode  uint32 // permission bits
	Nlink uint32
	Ino   uint64 // identity (InodeID)
	Size  int64
	Mtime int64 // nanoseconds
	Ctime int64
	// Last is the sequence number of the newest record that explained
	// the path's state: once records before the window's first turn
	// are pruned, a fingerprint whose Last is older is dropped.
	Last uint64
}

const fingerprintLen = 3*4 + 8*5

func fingerprintKey(path string) []byte { return append([]byte{prefixFingerprint}, path...) }

var scannedKey = []byte{prefixScanned}

func (f Fingerprint) encode() []byte {
	b := make([]byte, 0, fingerprintLen)
	for _, v := range []uint32{f.Type, f.Mode, f.Nlink} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	for _, v := range []uint64{f.Ino, uint64(f.Size), uint64(f.Mtime), uint64(f.Ctime), f.Last} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func decodeFingerprint(b []byte) (Fingerprint, error) {
	if len(b) != fingerprintLen {
		return Fingerprint{}, fmt.Errorf("%w: fingerprint of %d bytes", ErrCorrupt, len(b))
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[12+8*i:]) }
	return Fingerprint{Type: binary.BigEndian.Uint32(b), Mode: binary.BigEndian.Uint32(b[4:]),
		Nlink: binary.BigEndian.Uint32(b[8:]), Ino: u(0), Size: int64(u(1)), Mtime: int64(u(2)),
		Ctime: int64(u(3)), Last: u(4)}, nil
}

// ScannedUpTo returns the sequence number up to which the last scan
// took records into account (records from it on are newer than the
// fingerprints kept), or 0.
func (j *Journal) ScannedUpTo() (uint64, error) {
	var upTo uint64
	err := j.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(scannedKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) == 8 {
				upTo = binary.BigEndian.Uint64(v)
			}
			return nil
		})
	})
	return upTo, err
}

// EachFingerprint calls fn with every fingerprint kept, in path order.
// They are read a batch at a time and fn is called between reads, so
// a scan holds a batch, never every tracked path (a window of large
// turns tracks hundreds of thousands), and fn may write to the journal.
func (j *Journal) EachFingerprint(fn func(path string, f Fingerprint) error) error {
	type entry struct {
		path string
		f    Fingerprint
	}
	from := []byte{prefixFingerprint}
	for {
		var batch []entry
		err := j.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixFingerprint}})
			defer it.Close()
			for it.Seek(from); it.Valid() && len(batch) < recordBatch; it.Next() {
				path := string(it.Item().Key()[1:])
				err := it.Item().Value(func(v []byte) error {
					f, err := decodeFingerprint(v)
					batch = append(batch, entry{path, f})
					return err
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("journal: fingerprints: %w", err)
		}
		for _, e := range batch {
			if err := fn(e.path, e.f); err != nil {
				return err
			}
		}
		if len(batch) < recordBatch {
			return nil
		}
		from = append(fingerprintKey(batch[len(batch)-1].path), 0) // the next key after it
	}
}

// FingerprintsUnder returns the fingerprints kept for each of paths and
// for every path beneath them.
func (j *Journal) FingerprintsUnder(paths []string) (map[string]Fingerprint, error) {
	out := map[string]Fingerprint{}
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixFingerprint}})
		defer it.Close()
		add := func(item *badger.Item) error {
			path := string(item.Key()[1:])
			return item.Value(func(v []byte) error {
				f, err := decodeFingerprint(v)
				out[path] = f
				return err
			})
		}
		for _, p := range paths {
			key, sub := fingerprintKey(p), fingerprintKey(p+"/")
			if p == "" {
				sub = key // everything is beneath the root
			}
			if it.Seek(key); it.Valid() && bytes.Equal(it.Item().Key(), key) {
				if err := add(it.Item()); err != nil {
					return err
				}
			}
			for it.Seek(sub); it.ValidForPrefix(sub); it.Next() {
				if err := add(it.Item()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: fingerprints: %w", err)
	}
	return out, nil
}

// FingerprintsOf returns the fingerprints kept for paths, which are in
// order, read in one pass: a path near the one before is reached by
// stepping through the keys between, a far one by seeking, so that many
// paths cost about what reading their stretch of keys costs (one lookup
// each cost several times more).
func (j *Journal) FingerprintsOf(paths []string) (map[string]Fingerprint, error) {
	out := make(map[string]Fingerprint, len(paths))
	if len(paths) == 0 {
		return out, nil
	}
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixFingerprint}})
		defer it.Close()
		it.Seek(fingerprintKey(paths[0]))
		for _, p := range paths {
			key := fingerprintKey(p)
			for steps := 0; it.Valid() && bytes.Compare(it.Item().Key(), key) < 0; steps++ {
				if steps == stepsBeforeSeek {
					it.Seek(key)
					break
				}
				it.Next()
			}
			if !it.Valid() {
				return nil // past the last one kept
			}
			if !bytes.Equal(it.Item().Key(), key) {
				continue
			}
			err := it.Item().Value(func(v []byte) error {
				f, err := decodeFingerprint(v)
				out[p] = f
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: fingerprints: %w", err)
	}
	return out, nil
}

// stepsBeforeSeek is how many keys FingerprintsOf steps through before
// it seeks instead.
const stepsBeforeSeek = 32

// SaveFingerprints stores set, deletes drop, and then, unless upTo is
// 0 (a batch of a scan that goes on), notes that records before upTo
// are accounted for. The fingerprints go first (in
// batches: there may be many): a crash before the note leaves new
// fingerprints with the old mark, and the next scan takes more records
// as explaining changes than it needs to — never fewer, which would
// report changes made through the mount as made outside it.
func (j *Journal) SaveFingerprints(set map[string]Fingerprint, drop []string, upTo uint64) error {
	wb := j.db.NewWriteBatch()
	defer wb.Cancel()
	for p, f := range set {
		if err := wb.Set(fingerprintKey(p), f.encode()); err != nil {
			return err
		}
	}
	for _, p := range drop {
		if err := wb.Delete(fingerprintKey(p)); err != nil {
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("journal: save fingerprints: %w", err)
	}
	if upTo == 0 {
		return nil
	}
	err := j.db.Update(func(txn *badger.Txn) error {
		return txn.Set(scannedKey, binary.BigEndian.AppendUint64(nil, upTo))
	})
	if err != nil {
		return fmt.Errorf("journal: save fingerprints: %w", err)
	}
	return nil
}

// FingerprintView reads single fingerprints from one snapshot of the
// journal, for a reader that looks up many (a rollback's planner). Close
// it when done.
type FingerprintView struct{ txn *badger.Txn }

// ViewFingerprints opens a FingerprintView.
func (j *Journal) ViewFingerprints() *FingerprintView {
	return &FingerprintView{txn: j.db.NewTransaction(false)}
}

// Get returns the fingerprint kept for path, if one is.
func (v *FingerprintView) Get(path string) (Fingerprint, bool, error) {
	item, err := v.txn.Get(fingerprintKey(path))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Fingerprint{}, false, nil
	}
	if err != nil {
		return Fingerprint{}, false, fmt.Errorf("journal: fingerprint of %s: %w", path, err)
	}
	var f Fingerprint
	err = item.Value(func(b []byte) error {
		f, err = decodeFingerprint(b)
		return err
	})
	return f, err == nil, err
}

// Close ends the view.
func (v *FingerprintView) Close() { v.txn.Discard() }
