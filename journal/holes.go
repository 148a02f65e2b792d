package journal

import (
	"encoding/binary"
	"io"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/sparse"
)

// Holes are not data. A data record keeps the bytes of its range's
// data extents only, and lists the holes between them (Record.Holes):
// `truncate -s 4T` on a 350-byte file, undone, journals a few KiB, and
// putting it back punches the holes again instead of writing 4 TiB of
// zeros. The extents come from the source's descriptor (lseek
// SEEK_DATA/SEEK_HOLE, package sparse) when it has one — an *os.File,
// or the mount's backing descriptor; a source without one is all data.
//
// Chunks are cut from the data extents as one stream, so holes change
// nothing about deduplication, and a chunk may span a hole
// (ReadContent splits it there). The space check counts data: first
// what the file has allocated at most, before its extents are listed,
// so a file of millions of extents costs no listing when the journal
// could not hold their data anyway; then, if the filesystem counted
// less than it holds, the data found.

// holeBytes is the most one hole takes in an encoded record.
const holeBytes = 2 * binary.MaxVarintLen64

// fder is a source that can say where its holes are.
type fder interface{ Fd() uintptr }

// findData makes room for the pre-image of data record rec in src and
// returns where its data is — the extents to read, in order — and
// where its range ends: at src's end, if that comes first.
func (j *Journal) findData(g Gate, rec *Record, src io.ReaderAt) ([]sparse.Extent, int64, error) {
	f, ok := src.(fder)
	var st unix.Stat_t
	if !ok || unix.Fstat(int(f.Fd()), &st) != nil {
		// All data; a source whose stat fails lets its read say why.
		if err := j.room(g, need(rec, rec.Len)); err != nil {
			return nil, 0, err
		}
		if rec.Len <= 0 {
			return nil, rec.Off, nil
		}
		return []sparse.Extent{{Off: rec.Off, Len: rec.Len}}, rec.Off + rec.Len, nil
	}
	first := need(rec, min(rec.Len, st.Blocks*512))
	if err := j.room(g, first); err != nil {
		return nil, 0, err
	}
	end := rec.Off + rec.Len
	if rec.Len > st.Size-rec.Off {
		end = max(st.Size, rec.Off)
	}
	ext := fewerHoles(sparse.Data(int(f.Fd()), rec.Off, end), maxHoles-1)
	// The filesystem may have counted less than the file holds, and a
	// list of holes takes room in the record.
	if n := need(rec, dataBytes(ext)) + holeBytes*int64(max(len(ext)-1, 0)); n > first {
		if err := j.room(g, n); err != nil {
			return nil, 0, err
		}
	}
	return ext, end, nil
}

func dataBytes(ext []sparse.Extent) int64 {
	var n int64
	for _, e := range ext {
		n += e.Len
	}
	return n
}

// fewerHoles keeps the holes between extents at most max: past that
// (a file fragmented into more than a million pieces), the shortest
// holes between extents are read as data, zeros, so that the record
// stays within what decoding accepts.
func fewerHoles(ext []sparse.Extent, max int) []sparse.Extent {
	if len(ext) <= max {
		return ext
	}
	gaps := make([]int64, len(ext)-1)
	for i := range gaps {
		gaps[i] = ext[i+1].Off - ext[i].End()
	}
	sorted := slices.Clone(gaps)
	slices.Sort(sorted)
	limit := sorted[len(ext)-max-1] // merging every gap up to it leaves at most max extents
	out := ext[:1]
	for i, g := range gaps {
		if g <= limit {
			out[len(out)-1].Len = ext[i+1].End() - out[len(out)-1].Off
		} else {
			out = append(out, ext[i+1])
		}
	}
	return out
}

// clip cuts ext off at end.
func clip(ext []sparse.Extent, end int64) []sparse.Extent {
	out := ext[:0:0]
	for _, e := range ext {
		if e.Off >= end {
			break
		}
		e.Len = min(e.Len, end-e.Off)
		out = append(out, e)
	}
	return out
}

// holesOf returns the holes of [lo, hi) around its data extents ext.
func holesOf(ext []sparse.Extent, lo, hi int64) []Hole {
	var holes []Hole
	for _, h := range sparse.Holes(ext, lo, hi) {
		holes = append(holes, Hole{Off: h.Off, Len: h.Len})
	}
	return holes
}
