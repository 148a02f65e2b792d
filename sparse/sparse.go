// Package sparse finds and makes the holes of sparse files, so that what
// cowfs journals and puts back costs what a file holds, not its size: a
// 4 TiB file of 350 bytes is 350 bytes to read, store and restore, and
// no loop anywhere runs over the bytes of a hole.
//
// Data lists the data extents of a byte range (lseek SEEK_DATA and
// SEEK_HOLE); Zero makes a range read as zeros without changing the
// file's size, by punching a hole (fallocate PUNCH_HOLE|KEEP_SIZE) or,
// where the filesystem cannot, by writing zeros over the data there
// only; Copy copies a file's data extents and its size. A filesystem
// that keeps no holes answers lseek with one data extent to the end of
// the file (the kernel's generic implementation), so all of this is
// exact there too: holes save space and time, they never change a byte.
//
// Every call reads and writes at explicit offsets (pread, pwrite) and
// uses only the results of its lseeks, so a descriptor shared with
// other requests, whose offset nobody relies on, may be passed.
//
// Imports: os, x/sys/unix.
package sparse

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Extent is the byte range [Off, Off+Len) of a file.
type Extent struct{ Off, Len int64 }

// End is the offset just past e.
func (e Extent) End() int64 { return e.Off + e.Len }

// Data returns the data extents of the file open as fd within
// [lo, hi), in order; everything else in the range is a hole. The
// caller keeps hi within the file's size. Where the filesystem cannot
// say, the range is all data.
func Data(fd int, lo, hi int64) []Extent {
	var ext []Extent
	for pos := lo; pos < hi; {
		// Where the next hole starts, first: a range that is all data
		// (nearly every pre-image a write captures) takes this one
		// call, where asking for data first took two.
		h, err := unix.Seek(fd, pos, unix.SEEK_HOLE)
		if errors.Is(err, unix.ENXIO) {
			break // pos is past the end: the file shrank meanwhile
		}
		if err != nil {
			// No answer (not a filesystem's generic one, even): read
			// the rest, which is always right.
			ext = append(ext, Extent{pos, hi - pos})
			break
		}
		if h > pos {
			h = min(h, hi)
			ext = append(ext, Extent{pos, h - pos})
			pos = h
			continue
		}
		// A hole at pos: data starts again at d, if at all.
		d, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // holes from pos on (or the file shrank meanwhile)
		}
		if err != nil {
			ext = append(ext, Extent{pos, hi - pos})
			break
		}
		if d >= hi {
			break
		}
		if d <= pos {
			// Data where it was just told of a hole: something
			// changed the file meanwhile. Read a block as data
			// (reading is always right) and ask again after it.
			d = min(pos+4096, hi)
			ext = append(ext, Extent{pos, d - pos})
		}
		pos = d
	}
	return ext
}

// size returns the size of the file open as fd.
func size(fd int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("sparse: stat: %w", err)
	}
	return st.Size, nil
}

// Holes returns the parts of [lo, hi) that data, sorted disjoint
// extents within it, does not cover.
func Holes(data []Extent, lo, hi int64) []Extent {
	var out []Extent
	pos := lo
	for _, e := range data {
		if e.Off > pos {
			out = append(out, Extent{pos, e.Off - pos})
		}
		pos = max(pos, e.End())
	}
	if pos < hi {
		out = append(out, Extent{pos, hi - pos})
	}
	return out
}

// Zero makes [off, off+n) of f read as zeros, leaving its size as it
// is: it punches a hole there. A filesystem that cannot punch holes
// gets zeros written over the data in the range instead (wrote is
// then true), never over what already reads as zeros: bytes past the
// end of the file, or holes.
func Zero(f *os.File, off, n int64) (wrote bool, err error) {
	if n <= 0 {
		return false, nil
	}
	fd := int(f.Fd())
	err = punch(fd, off, n)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return false, fmt.Errorf("sparse: punch a hole at %d: %w", off, err)
	}
	end, err := size(fd)
	if err != nil {
		return false, err
	}
	ext := Data(fd, off, min(end, off+n))
	for _, e := range ext {
		if err := writeZeros(f, e); err != nil {
			return true, err
		}
	}
	return len(ext) > 0, nil
}

// punch punches a hole (a variable, so tests can refuse it as some
// filesystems do).
var punch = func(fd int, off, n int64) error {
	return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}

var zeros = make([]byte, 1<<20)

func writeZeros(f *os.File, e Extent) error {
	for off := e.Off; off < e.End(); {
		n := min(int64(len(zeros)), e.End()-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("sparse: write zeros at %d: %w", off, err)
		}
		off += n
	}
	return nil
}

// Copy makes dst, an empty file, a copy of the first n bytes of src
// (all of it, if it is shorter): src's data extents written at their
// offsets, then dst's size set, so src's holes are holes in dst (dst's
// filesystem permitting).
func Copy(dst, src *os.File, n int64) error {
	end, err := size(int(src.Fd()))
	if err != nil {
		return err
	}
	end = min(end, n)
	ext := Data(int(src.Fd()), 0, end)
	// No larger than what is copied: a diff copies thousands of small
	// files, each a buffer of its own.
	buf := make([]byte, max(1, min(1<<20, end)))
	for _, e := range ext {
		for off := e.Off; off < e.End(); {
			n := min(int64(len(buf)), e.End()-off)
			m, err := src.ReadAt(buf[:n], off)
			if m > 0 {
				if _, err := dst.WriteAt(buf[:m], off); err != nil {
					return fmt.Errorf("sparse: copy: %w", err)
				}
				off += int64(m)
			}
			if err != nil {
				// Shorter than it was: it shrank while being copied;
				// the caller's own checks see that.
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("sparse: copy: %w", err)
			}
		}
	}
	if err := dst.Truncate(end); err != nil {
		return fmt.Errorf("sparse: copy: %w", err)
	}
	return nil
}
