package capture

import (
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// Each method here journals one kind of pre-image of an identity, with
// its State s locked (Op.Take), unless the epoch has journaled it
// already or created the identity. Each returns once the record is
// appended: the caller may then destroy what it describes, and must not
// if the method failed.

// Attr journals the attributes (stat st) of identity id at path before
// its first change in the epoch — its first touch — and notes its size
// then, which bounds the bytes Data journals. cause says what the
// change is (journal.KindAttr).
func (o *Op) Attr(s *State, id uint64, path string, st *unix.Stat_t, cause journal.Cause) error {
	if s.attr || s.created {
		return nil
	}
	rec := &journal.Record{Kind: journal.KindAttr, Cause: cause, Path: path,
		Type: st.Mode & syscall.S_IFMT, Ino: id, Attr: journal.AttrOf(st)}
	if err := o.append(rec, nil, s, mark{what: markAttr}); err != nil {
		return err
	}
	s.attr, s.size = true, st.Size
	return nil
}

// Dirent journals the attributes of directory id (open as dir, at path)
// before its first entry change in the epoch, so that undo puts its
// times back. It stats the directory only if that is still to be done.
func (o *Op) Dirent(s *State, id uint64, path string, dir int) error {
	if s.attr || s.created {
		return nil
	}
	st, err := backing.Fstat(dir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	return o.Attr(s, id, path, st, journal.CauseDirent)
}

// Source opens what a pre-image is read from, and returns it with what
// to call when done with it. Data calls it only when bytes are missing.
type Source func() (io.ReaderAt, func(), error)

// Opened is a Source of r, open already: nothing to let go.
func Opened(r io.ReaderAt) Source {
	return func() (io.ReaderAt, func(), error) { return r, func() {}, nil }
}

// Data journals the pre-image of bytes [lo, hi) of file id at path,
// read from src, as far as they existed at the first touch (Attr must
// have run: bytes past the size then are new, and undo cuts them off)
// and are not journaled yet. Each range still missing is one
// journal.KindData record. hi may be ToEnd.
func (o *Op) Data(s *State, id uint64, path string, src Source, lo, hi int64) error {
	if s.created {
		return nil
	}
	hi = min(hi, s.size)
	gaps := s.saved.Missing(lo, hi)
	if len(gaps) == 0 {
		return nil
	}
	f, done, err := src()
	if err != nil {
		return fmt.Errorf("open pre-image of %s: %w", path, err)
	}
	defer done()
	for _, g := range gaps {
		rec := &journal.Record{Kind: journal.KindData, Path: path, Type: syscall.S_IFREG, Ino: id, Off: g.Lo, Len: g.Hi - g.Lo}
		if err := o.append(rec, f, s, mark{what: markData, lo: g.Lo, hi: g.Hi}); err != nil {
			return err
		}
		// Marked only now, with s locked since the check: an Op that
		// finds these bytes captured finds their record appended.
		s.saved.Add(g.Lo, g.Hi)
	}
	return nil
}

// Xattr journals the value of extended attribute name of id at path (of
// type typ) before its first change in the epoch, or that it did not
// exist: old reads it (value, whether it exists), and is called only if
// that is still to be done.
func (o *Op) Xattr(s *State, id uint64, path string, typ uint32, name string, old func() ([]byte, bool, error)) error {
	if s.created || s.xattrs[name] {
		return nil
	}
	val, exists, err := old()
	if err != nil {
		return err
	}
	rec := &journal.Record{Kind: journal.KindXattr, Path: path, Type: typ, Ino: id,
		XattrName: name, XattrValue: val, XattrExisted: exists}
	if err := o.append(rec, nil, s, mark{what: markXattr, name: name}); err != nil {
		return err
	}
	if s.xattrs == nil {
		s.xattrs = map[string]bool{}
	}
	s.xattrs[name] = true
	return nil
}

// File reads a raw descriptor at offsets: a pre-image's source. Its Fd
// lets the journal find the file's holes (package sparse), which it then
// neither reads nor stores.
type File int

func (f File) Fd() uintptr { return uintptr(f) }

func (f File) ReadAt(b []byte, off int64) (int, error) {
	n, err := unix.Pread(int(f), b, off)
	if err == nil && n < len(b) {
		err = io.EOF
	}
	return max(n, 0), err
}
