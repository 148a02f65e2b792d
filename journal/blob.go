package journal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// A blob is a value of a rollback that grows with the turns it undoes:
// its plan (a step for every record, 24 MB of JSON for 150,000 of
// them) and the records it skipped. Badger takes no value over its
// value-log file size (16 MiB) and no transaction over a few MiB, so a
// blob is cut into pieces of at most blobPiece bytes, each stored
// zstd-compressed under its own key:
//
//	'p' id(8) kind(1) version(4) part(4)
//
// The rollback's record names the version it uses (blobRef). A new
// version's parts are committed, each in its own transaction, before
// the record that names it; the version it replaces is deleted after.
// So a crash leaves the record naming a whole blob, and perhaps parts
// of a version no record names, which Open deletes (sweepBlobs).
//
// A rollback stored before blobs (format 2) has its plan whole under
// 'p' id(8) and its skipped records in its record; both are still read.

const (
	blobPlan    = 'P' // the plan, JSON (package rollback)
	blobSkipped = 'S' // Rollback.Skipped, uvarints

	blobPiece = 1 << 20 // uncompressed bytes per part: the decoder's window allows 2 MiB
)

// blobRef names the stored version of a blob.
type blobRef struct {
	Version uint32 `json:"version"`
	Parts   uint32 `json:"parts"`
	// Items is the number of entries it holds, where that means
	// something (blobSkipped).
	Items int `json:"items,omitempty"`
}

func (r blobRef) stored() bool { return r.Version != 0 }

func blobKey(id uint64, kind byte, version, part uint32) []byte {
	k := numKey(prefixPlan, id)
	k = append(k, kind)
	k = binary.BigEndian.AppendUint32(k, version)
	return binary.BigEndian.AppendUint32(k, part)
}

// putBlob stores data as version of blob kind of rollback id, and
// returns its ref. Each part is committed on its own; nothing names
// them until the caller commits a record with the ref.
func (j *Journal) putBlob(id uint64, kind byte, version uint32, data []byte) (blobRef, error) {
	ref := blobRef{Version: version}
	for off := 0; off == 0 || off < len(data); off += blobPiece {
		piece := data[off:min(off+blobPiece, len(data))]
		z := j.enc.EncodeAll(piece, make([]byte, 0, len(piece)/4))
		k := blobKey(id, kind, version, ref.Parts)
		if err := j.db.Update(func(txn *badger.Txn) error { return txn.Set(k, z) }); err != nil {
			return blobRef{}, fmt.Errorf("journal: store part %d of rollback %d's %c: %w", ref.Parts, id, kind, err)
		}
		ref.Parts++
	}
	return ref, nil
}

// getBlob reads the blob ref names.
func (j *Journal) getBlob(txn *badger.Txn, id uint64, kind byte, ref blobRef) ([]byte, error) {
	var out []byte
	for part := uint32(0); part < ref.Parts; part++ {
		item, err := txn.Get(blobKey(id, kind, ref.Version, part))
		if err != nil {
			return nil, fmt.Errorf("%w: part %d of rollback %d's %c: %v", ErrCorrupt, part, id, kind, err)
		}
		err = item.Value(func(z []byte) error {
			// Piece by piece: the decoder refuses more than 2 MiB
			// in one call, whatever it appends to.
			piece, err := j.dec.DecodeAll(z, nil)
			out = append(out, piece...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%w: part %d of rollback %d's %c: %v", ErrCorrupt, part, id, kind, err)
		}
	}
	return out, nil
}

// deleteBlob deletes the parts of the blob ref names.
func deleteBlob(txn *badger.Txn, id uint64, kind byte, ref blobRef) error {
	for part := uint32(0); part < ref.Parts; part++ {
		if err := txn.Delete(blobKey(id, kind, ref.Version, part)); err != nil {
			return err
		}
	}
	return nil
}

// sweepBlobs deletes parts no rollback names: of a version a crash kept
// from being named, or replaced, or of a rollback forgotten.
func (j *Journal) sweepBlobs() error {
	var stale [][]byte
	err := j.db.View(func(txn *badger.Txn) error {
		rbs, err := rollbacks(txn)
		if err != nil {
			return err
		}
		live := map[uint64]*Rollback{}
		for i := range rbs {
			live[rbs[i].ID] = &rbs[i]
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixPlan}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			r := live[keyNum(k)]
			keep := false
			switch {
			case r == nil:
			case len(k) == 9: // format 2: the whole plan
				keep = !r.PlanBlob.stored()
			case len(k) == 18:
				ref := map[byte]blobRef{blobPlan: r.PlanBlob, blobSkipped: r.SkippedBlob}[k[9]]
				keep = ref.stored() && binary.BigEndian.Uint32(k[10:]) == ref.Version && binary.BigEndian.Uint32(k[14:]) < ref.Parts
			}
			if !keep {
				stale = append(stale, it.Item().KeyCopy(nil))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: sweep rollback plans: %w", err)
	}
	if len(stale) > 0 {
		j.log.Info("journal: dropping parts of rollback plans no rollback names", "count", len(stale))
	}
	return j.deleteKeys(stale)
}

// encodeSeqs and decodeSeqs are the form of blobSkipped.
func encodeSeqs(seqs []uint64) []byte {
	b := make([]byte, 0, 4*len(seqs))
	for _, s := range seqs {
		b = binary.AppendUvarint(b, s)
	}
	return b
}

func decodeSeqs(b []byte) ([]uint64, error) {
	var out []uint64
	for len(b) > 0 {
		s, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad sequence number")
		}
		out = append(out, s)
		b = b[n:]
	}
	return out, nil
}
