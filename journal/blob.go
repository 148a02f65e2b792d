package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

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
// returns its ref (putBlobFrom).
func (j *Journal) putBlob(id uint64, kind byte, version uint32, data []byte) (blobRef, error) {
	return j.putBlobFrom(id, kind, version, planBytes(data))
}

// putBlobFrom stores what write writes as version of blob kind of
// rollback id, and returns its ref. What is written is cut into parts
// as it comes, each compressed and committed on its own — so a plan of
// 24 MB is never whole in memory — and nothing names them until the
// caller commits a record with the ref.
func (j *Journal) putBlobFrom(id uint64, kind byte, version uint32, write PlanWriter) (blobRef, error) {
	w := &blobWriter{j: j, id: id, kind: kind, ref: blobRef{Version: version}, buf: make([]byte, 0, blobPiece)}
	if err := write(w); err != nil {
		return blobRef{}, err
	}
	if w.err == nil && (len(w.buf) > 0 || w.ref.Parts == 0) {
		w.flush()
	}
	return w.ref, w.err
}

// PlanWriter writes a rollback's plan (JSON, package rollback) to w.
type PlanWriter func(w io.Writer) error

// planBytes is the PlanWriter of bytes already encoded.
func planBytes(b []byte) PlanWriter {
	return func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}

// blobWriter stores what is written to it as parts of one blob.
type blobWriter struct {
	j    *Journal
	id   uint64
	kind byte
	ref  blobRef
	buf  []byte
	err  error
}

func (w *blobWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 && w.err == nil {
		k := min(len(b), blobPiece-len(w.buf))
		w.buf = append(w.buf, b[:k]...)
		b = b[k:]
		if len(w.buf) == blobPiece {
			w.flush()
		}
	}
	if w.err != nil {
		return 0, w.err
	}
	return n, nil
}

// flush stores what is buffered as the next part.
func (w *blobWriter) flush() {
	z := w.j.codec.Compress(make([]byte, 0, len(w.buf)/4), w.buf)
	k := blobKey(w.id, w.kind, w.ref.Version, w.ref.Parts)
	if err := w.j.db.Update(func(txn *badger.Txn) error { return txn.Set(k, z) }); err != nil {
		w.err = fmt.Errorf("journal: store part %d of rollback %d's %c: %w", w.ref.Parts, w.id, w.kind, err)
		return
	}
	w.ref.Parts++
	w.buf = w.buf[:0]
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
			piece, err := j.codec.Decompress(nil, z)
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
