package journal

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/cowfs/cowfs/journal/pack"
	"github.com/cowfs/cowfs/journal/wal"
	"github.com/cowfs/cowfs/sparse"
)

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, pack.ChunkSize); return &b }}

// storeContent reads the extents ext of src, in order, cuts their
// bytes into chunks (pack.Cut) — as one stream: where the holes
// between them fall does not decide the cuts — and stores those the
// journal does not hold yet in the pack being written (package pack). It
// returns the chunks, how many bytes were new to the journal, the
// index entries of the new chunks, which the caller logs with its
// record, and where src ended before the extents did (a file shorter
// than it was), or -1 if it did not. The caller holds
// j.content shared, so no chunk found present can be deleted before
// the caller's record references it.
//
// Order, and why a crash anywhere is safe: a chunk's bytes are written
// to its pack (and, with Options.Sync, fsynced) before its index entry
// is logged, so an entry never names bytes that are not there; the
// entries are logged in the same entry of the record log as the record
// that references them. A crash before leaves bytes no entry names:
// unused space, which reclaim gives back.
func (j *Journal) storeContent(src io.ReaderAt, ext []sparse.Extent) ([]Chunk, int64, []wal.Op, int64, error) {
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	buf := *bp
	var chunks []Chunk
	var stored int64
	stop := int64(-1)
	ext = slices.Clone(ext)
	ix := j.newIndexWriter()
	have, eof := 0, false
	for {
		// Fill the buffer: a cut may only depend on what is read if
		// the content ends there.
		for !eof && len(ext) > 0 && have < len(buf) {
			e := &ext[0]
			want := min(int64(len(buf)-have), e.Len)
			m, err := src.ReadAt(buf[have:have+int(want)], e.Off)
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, 0, nil, 0, fmt.Errorf("journal: read pre-image at %d: %w", e.Off, err)
			}
			have += m
			e.Off += int64(m)
			e.Len -= int64(m)
			if int64(m) < want {
				eof, stop = true, e.Off // src is shorter than asked: keep what it had
			} else if e.Len == 0 {
				ext = ext[1:]
			}
		}
		if have == 0 {
			break
		}
		b := buf[:pack.Cut(buf[:have])]
		c := Chunk{Hash: pack.Hash(b), Size: uint32(len(b))}
		chunks = append(chunks, c)
		added, err := j.storeChunk(ix, c.Hash, b)
		if err != nil {
			return nil, 0, nil, 0, err
		}
		stored += added
		have = copy(buf, buf[len(b):have])
	}
	if j.opts.Sync {
		if err := j.packs.Flush(); err != nil {
			return nil, 0, nil, 0, err
		}
	}
	return chunks, stored, ix.ops, stop, nil
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
	z := j.codec.Compress(make([]byte, 0, len(b)/2), b)
	l, err := j.packs.Add(h, len(b), z)
	if err != nil {
		return 0, err
	}
	ix.set(h, l)
	return l.Size(), nil
}

// ReadChunk returns the uncompressed bytes of c.
func (j *Journal) ReadChunk(c Chunk) ([]byte, error) {
	// Shared: reclaim deletes a pack only under j.content exclusively,
	// after the index moved every entry out of it, so the pack a
	// location names is there until the read is done.
	j.content.RLock()
	defer j.content.RUnlock()
	var l pack.Loc
	err := j.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(chunkKey(c.Hash))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			l, err = pack.DecodeLoc(v)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("journal: chunk %x: %w", c.Hash[:6], err)
	}
	z, err := j.packs.Read(l, c.Hash)
	if err != nil {
		return nil, err
	}
	out, err := j.codec.Decompress(make([]byte, 0, c.Size), z)
	if err != nil {
		return nil, fmt.Errorf("%w: chunk %x: %v", ErrCorrupt, c.Hash[:6], err)
	}
	if len(out) != int(c.Size) || pack.Hash(out) != c.Hash {
		return nil, fmt.Errorf("%w: chunk %x does not match its hash", ErrCorrupt, c.Hash[:6])
	}
	return out, nil
}

// ReadContent calls fn with the pre-image bytes of a KindData record,
// in order, each run with its file offset. The record's holes are not
// passed (they read as zeros): a caller that writes the bytes back
// makes them holes itself. A chunk that spans a hole comes in two
// calls.
func (j *Journal) ReadContent(r *Record, fn func(off int64, b []byte) error) error {
	off, end, holes := r.Off, r.Off+r.Len, r.Holes
	for _, c := range r.Chunks {
		b, err := j.ReadChunk(c)
		if err != nil {
			return err
		}
		for len(b) > 0 {
			if len(holes) > 0 && holes[0].Off <= off {
				off = max(off, holes[0].Off+holes[0].Len)
				holes = holes[1:]
				continue
			}
			n := int64(len(b))
			if len(holes) > 0 {
				n = min(n, holes[0].Off-off)
			}
			if off+n > end {
				return fmt.Errorf("%w: record %d holds more bytes than its range", ErrCorrupt, r.Seq)
			}
			if err := fn(off, b[:n]); err != nil {
				return err
			}
			off += n
			b = b[n:]
		}
	}
	return nil
}

// sweepOrphanChunks deletes what a crash between storing a pre-image
// and committing its record leaves: references of records that do not
// exist (a record with very many chunks commits its references first,
// see Append), then index entries no record references. Their bytes in
// packs become unused space, for reclaim. The entries that stay fill
// the chunk filter (pack.Filter).
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
				j.chunks.Add(h)
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
