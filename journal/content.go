package journal

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, ChunkSize); return &b }}

// storeContent reads n bytes at off from src, cuts them into chunks
// (chunker.go) and stores those the journal does not hold yet in the
// pack being written (pack.go). It returns the chunks, how many bytes
// were new to the journal, and the index entries of the new chunks,
// which the caller logs with its record. The caller holds j.content
// shared, so no chunk found present can be deleted before the caller's
// record references it. If src ends before off+n, the chunks cover
// what it had.
//
// Order, and why a crash anywhere is safe: a chunk's bytes are written
// to its pack (and, with Options.Sync, fsynced) before its index entry
// is logged, so an entry never names bytes that are not there; the
// entries are logged in the same entry of the record log as the record
// that references them. A crash before leaves bytes no entry names:
// unused space, which reclaim gives back.
func (j *Journal) storeContent(src io.ReaderAt, off, n int64) ([]Chunk, int64, []walOp, error) {
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	buf := *bp
	var chunks []Chunk
	var stored int64
	ix := j.newIndexWriter()
	have, eof := 0, false
	for {
		// Fill the buffer: a cut may only depend on what is read if
		// the content ends there.
		for !eof && n > 0 && have < len(buf) {
			want := min(int64(len(buf)-have), n)
			m, err := src.ReadAt(buf[have:have+int(want)], off)
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, 0, nil, fmt.Errorf("journal: read pre-image at %d: %w", off, err)
			}
			have += m
			off += int64(m)
			n -= int64(m)
			if int64(m) < want {
				eof = true // src is shorter than asked: keep what it had
			}
		}
		if have == 0 {
			break
		}
		b := buf[:cut(buf[:have])]
		c := Chunk{Hash: hashOf(b), Size: uint32(len(b))}
		chunks = append(chunks, c)
		added, err := j.storeChunk(ix, c.Hash, b)
		if err != nil {
			return nil, 0, nil, err
		}
		stored += added
		have = copy(buf, buf[len(b):have])
	}
	if j.opts.Sync {
		if err := j.packs.flush(); err != nil {
			return nil, 0, nil, err
		}
	}
	return chunks, stored, ix.ops, nil
}

// storeChunk stores the chunk b of hash h unless the journal holds it,
// and returns the bytes it added.
//
// Two changes storing the same new chunk at once may both write it;
// the index then names one copy, and the other is unused space.
func (j *Journal) storeChunk(ix *indexWriter, h [32]byte, b []byte) (int64, error) {
	if ok, err := ix.has(h); err != nil || ok {
		return 0, err
	}
	z := j.enc.EncodeAll(b, make([]byte, 0, len(b)/2))
	l, err := j.packs.add(h, len(b), z)
	if err != nil {
		return 0, err
	}
	ix.set(h, l)
	return l.size(), nil
}

// ReadChunk returns the uncompressed bytes of c.
func (j *Journal) ReadChunk(c Chunk) ([]byte, error) {
	// Shared: reclaim deletes a pack only under j.content exclusively,
	// after the index moved every entry out of it, so the pack a
	// location names is there until the read is done.
	j.content.RLock()
	defer j.content.RUnlock()
	var l loc
	err := j.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(chunkKey(c.Hash))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			l, err = decodeLoc(v)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("journal: chunk %x: %w", c.Hash[:6], err)
	}
	z, err := j.packs.read(l, c.Hash)
	if err != nil {
		return nil, err
	}
	out, err := j.dec.DecodeAll(z, make([]byte, 0, c.Size))
	if err != nil {
		return nil, fmt.Errorf("%w: chunk %x: %v", ErrCorrupt, c.Hash[:6], err)
	}
	if len(out) != int(c.Size) || hashOf(out) != c.Hash {
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

// sweepOrphanChunks deletes what a crash between storing a pre-image
// and committing its record leaves: references of records that do not
// exist (a record with very many chunks commits its references first,
// see Append), then index entries no record references. Their bytes in
// packs become unused space, for reclaim. The entries that stay fill
// the chunk filter (filter.go).
func (j *Journal) sweepOrphanChunks() error {
	var refs, orphans [][]byte
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixRef}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			_, err := txn.Get(recordKey(refSeq(it.Item().Key())))
			if errors.Is(err, badger.ErrKeyNotFound) {
				refs = append(refs, it.Item().KeyCopy(nil))
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: sweep chunks: %w", err)
	}
	if len(refs) > 0 {
		j.log.Info("journal: dropping references of records that do not exist", "count", len(refs))
		if err := j.deleteKeys(refs); err != nil {
			return err
		}
	}
	err = j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixChunk}})
		defer it.Close()
		ri := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixRef}})
		defer ri.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var h [32]byte
			copy(h[:], it.Item().Key()[1:])
			p := refPrefix(h)
			ri.Seek(p)
			if !ri.ValidForPrefix(p) {
				orphans = append(orphans, it.Item().KeyCopy(nil))
			} else {
				j.chunks.add(h)
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
	if len(keys) == 0 {
		return nil
	}
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
