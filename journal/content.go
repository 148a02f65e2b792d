package journal

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

const (
	// ChunkSize is the most uncompressed bytes one chunk holds.
	ChunkSize = 1 << 20
	// batchBytes caps the compressed bytes one Badger transaction
	// holds before it is committed: a pre-image of any size is
	// stored with bounded memory and never hits ErrTxnTooBig.
	batchBytes = 4 << 20
)

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, ChunkSize); return &b }}

// storeContent reads n bytes at off from src and stores them as
// chunks. It returns the chunks and how many compressed bytes were new
// to the journal. The caller holds j.content shared. If src ends before
// off+n, the chunks cover what it had.
func (j *Journal) storeContent(src io.ReaderAt, off, n int64) ([]Chunk, int64, error) {
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	var chunks []Chunk
	var stored int64
	txn := j.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	pending := 0
	for n > 0 {
		want := min(int64(ChunkSize), n)
		m, err := src.ReadAt((*bp)[:want], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("journal: read pre-image at %d: %w", off, err)
		}
		if m == 0 {
			break
		}
		buf := (*bp)[:m]
		c := Chunk{Hash: sha256.Sum256(buf), Size: uint32(m)}
		chunks = append(chunks, c)
		off += int64(m)
		n -= int64(m)
		if n > 0 && int64(m) < want {
			n = 0 // src is shorter than asked: keep what it had
		}

		key := chunkKey(c.Hash)
		if _, err := txn.Get(key); err == nil {
			continue // stored already, by this or an earlier record
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return nil, 0, fmt.Errorf("journal: look up chunk: %w", err)
		}
		z := j.enc.EncodeAll(buf, make([]byte, 0, len(buf)/2))
		if err := txn.Set(key, z); err != nil {
			return nil, 0, fmt.Errorf("journal: store chunk: %w", err)
		}
		stored += int64(len(z))
		pending += len(z)
		if pending >= batchBytes {
			if err := txn.Commit(); err != nil {
				return nil, 0, fmt.Errorf("journal: commit chunks: %w", err)
			}
			txn = j.db.NewTransaction(true)
			pending = 0
		}
	}
	if err := txn.Commit(); err != nil {
		return nil, 0, fmt.Errorf("journal: commit chunks: %w", err)
	}
	return chunks, stored, nil
}

// ReadChunk returns the uncompressed bytes of c.
func (j *Journal) ReadChunk(c Chunk) ([]byte, error) {
	var out []byte
	err := j.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(chunkKey(c.Hash))
		if err != nil {
			return err
		}
		return item.Value(func(z []byte) error {
			out, err = j.dec.DecodeAll(z, make([]byte, 0, c.Size))
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("journal: chunk %x: %w", c.Hash[:6], err)
	}
	if len(out) != int(c.Size) || sha256.Sum256(out) != c.Hash {
		return nil, fmt.Errorf("%w: chunk %x does not match its hash", ErrCorrupt, c.Hash[:6])
	}
	return out, nil
}

// ReadContent calls fn with the pre-image bytes of a KindData record,
// chunk by chunk, with each chunk's file offset.
func (j *Journal) ReadContent(r *Record, fn func(off int64, b []byte) error) error {
	off := r.Off
	for _, c := range r.Chunks {
		b, err := j.ReadChunk(c)
		if err != nil {
			return err
		}
		if err := fn(off, b); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}

// sweepOrphanChunks deletes chunks no record references: what a crash
// between storing a pre-image and committing its record leaves.
func (j *Journal) sweepOrphanChunks() error {
	var orphans [][]byte
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixChunk}})
		defer it.Close()
		refs := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixRef}})
		defer refs.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var h [32]byte
			copy(h[:], it.Item().Key()[1:])
			p := refPrefix(h)
			refs.Seek(p)
			if !refs.ValidForPrefix(p) {
				orphans = append(orphans, it.Item().KeyCopy(nil))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: sweep chunks: %w", err)
	}
	if len(orphans) > 0 {
		j.log.Info("journal: dropping unreferenced chunks", "count", len(orphans))
	}
	return j.deleteKeys(orphans)
}

// deleteKeys deletes keys in bounded batches.
func (j *Journal) deleteKeys(keys [][]byte) error {
	wb := j.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return fmt.Errorf("journal: delete: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("journal: delete: %w", err)
	}
	return nil
}
