package rollback

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/sparse"
)

// Version is what a path held at an earlier time, and where to read it
// today.
type Version struct {
	Exists bool
	Type   uint32 // S_IFMT bits
	Loc    string // backing-relative path of the object when its At was read (live or aside)
	Ino    uint64
	// What the object was when its At was read: a copy of it made
	// later is of the same state if it still is (Unchanged).
	Ctime unix.Timespec
	Size  int64

	undo []undoRef // a regular file's data and attribute records in the At's range, newest first
	at   *At
}

// undoRef is what an At keeps of a data or attribute record: the
// record itself is read again when its content is put back, so that
// an At over 100,000 records holds 24 bytes for each, not the record.
type undoRef struct {
	seq  uint64
	size int64 // attribute record: the size before
	data bool
}

// ErrNoPreimage: the journal cannot say what a path held.
var ErrNoPreimage = errors.New("no pre-image in the journal")

// ErrMoved: the object a Version reads is no longer where its At found
// it (renamed or removed since). The caller reads the At again.
var ErrMoved = errors.New("moved since it was looked up")

// At is the workspace as it was at an earlier time, for reading many
// paths of that time (a diff's files, an export's paths): the records
// since then are undone once, newest first, as they are read from the
// journal — never held — into a model of the namespace (past) and, for
// each inode, the numbers of its data and attribute records. A lookup
// costs the depth of its path; a file's records are found in the
// index, not by a pass over every record.
//
// An At covers the records up to a sequence number, upTo — a Pin's:
// lookups (Find) give where each object was then, and must be made
// while the namespace is as it was then (under the gate that pinned
// it). Copies (Materialize) may be made later, while changes go on:
// after copying an object, the At reads the records appended since,
// and puts back their pre-images too, so the copy ends as the object
// was at the At's time whatever changed meanwhile — if that time is
// the start of an epoch (journal.Pin), and the records are still
// pinned.
type At struct {
	tree    *backing.Tree
	j       *journal.Journal
	past    *past
	rootDev uint64
	upTo    uint64
	undo    map[uint64][]undoRef // inode -> its records below upTo, newest first
	// Records from upTo on, read after copies: later[ino] oldest
	// first, read up to caught.
	later  map[uint64][]undoRef
	caught uint64
}

// NewAt returns the workspace as it is at upTo (the next sequence
// number when the gate was taken), to be moved back in time by Undo.
// asidePath maps an aside name to its backing-relative path; rootDev
// is the backing root's device.
func NewAt(j *journal.Journal, t *backing.Tree, upTo uint64, asidePath func(string) string, rootDev uint64) *At {
	return &At{tree: t, j: j, past: newPast(asidePath), rootDev: rootDev, upTo: upTo, caught: upTo,
		undo: map[uint64][]undoRef{}}
}

// Since returns the workspace as it was when record from was made:
// NewAt with the records from <= seq < upTo undone.
func Since(j *journal.Journal, t *backing.Tree, from, upTo uint64, asidePath func(string) string, rootDev uint64) (*At, error) {
	a := NewAt(j, t, upTo, asidePath, rootDev)
	if from >= upTo {
		return a, nil
	}
	err := j.Scan(from, upTo, true, func(r *journal.Record) error {
		a.Undo(r)
		return nil
	})
	return a, err
}

// Undo moves a back before r, a record below upTo older than every
// record undone before.
func (a *At) Undo(r *journal.Record) {
	s := slim(r)
	a.past.undo(&s)
	if ref, ok := refOf(r); ok {
		a.undo[r.Ino] = append(a.undo[r.Ino], ref)
	}
}

func refOf(r *journal.Record) (undoRef, bool) {
	switch r.Kind {
	case journal.KindData:
		return undoRef{seq: r.Seq, data: true}, true
	case journal.KindAttr:
		return undoRef{seq: r.Seq, size: r.Attr.Size}, true
	}
	return undoRef{}, false
}

// Find returns what path held at a's time.
func (a *At) Find(path string) (Version, error) {
	e := a.past.lookup(path)
	if e.absent {
		return Version{}, nil
	}
	if e.vanished() {
		return Version{}, fmt.Errorf("%s: %w", path, ErrNoPreimage)
	}
	st, err := a.tree.Lstat(e.loc)
	if err != nil {
		if !e.kept && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR)) {
			// Nothing records a change to the path, or to the
			// directory it followed, that took an object away from
			// where it is followed to; yet nothing is there: nothing
			// was there then either, or it went outside the mount.
			return Version{}, nil
		}
		return Version{}, fmt.Errorf("%s: %w", path, err)
	}
	v := Version{Exists: true, Type: st.Mode & syscall.S_IFMT, Loc: e.loc, Ino: e.ino, Ctime: st.Ctim, Size: st.Size, at: a}
	if v.Ino == 0 {
		v.Ino = journal.InodeID(st.Dev, st.Ino, a.rootDev)
	}
	if v.Type == syscall.S_IFREG {
		v.undo = a.undo[v.Ino] // no content to put back for others
	}
	return v, nil
}

// Open opens the object v reads today, for MaterializeFrom. It fails
// with ErrMoved if another object is at v.Loc now.
func (v Version) Open(t *backing.Tree) (*os.File, error) {
	if v.Type != syscall.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", v.Loc)
	}
	f, err := t.Open(v.Loc, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("%s: %w", v.Loc, ErrMoved)
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	if v.at != nil && journal.InodeID(st.Dev, st.Ino, v.at.rootDev) != v.Ino {
		f.Close()
		return nil, fmt.Errorf("%s: %w", v.Loc, ErrMoved)
	}
	return f, nil
}

// Unchanged reports whether src, v's object opened by Open, is still
// as it was when v's At was read: same change time and size. A copy
// made while that holds is of that state even where no record could
// put it back (a time inside the open epoch, journal.Pin) — provided
// the change time was older than the filesystem clock's tick then,
// which the caller judges.
func (v Version) Unchanged(src *os.File) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return false, err
	}
	return st.Ctim == v.Ctime && st.Size == v.Size, nil
}

// Materialize writes the content v had into dst, an empty file: its
// content today with the pre-images since v's time put back, newest
// first, so each byte ends as its oldest pre-image.
func (v Version) Materialize(t *backing.Tree, j *journal.Journal, dst *os.File) error {
	src, err := v.Open(t)
	if err != nil {
		return err
	}
	defer src.Close()
	return v.MaterializeFrom(src, j, dst)
}

// SizeFrom is the size v had: its size today, as the oldest attribute
// record since then says it was.
func (v Version) SizeFrom(today int64) int64 {
	size := today
	for _, r := range v.undo {
		if !r.data {
			size = r.size // newest first: the last one is the oldest
		}
	}
	return size
}

// MaterializeFrom is Materialize from src, v's object opened by Open.
// It copies only what v's size keeps of src — a file that has grown
// since costs what it held, not what it holds — and keeps holes holes:
// a sparse file costs dst its data, not its size. What changed the
// object while it was copied has its records appended before it
// proceeded: they are read once the copy is made, and undone first.
func (v Version) MaterializeFrom(src *os.File, j *journal.Journal, dst *os.File) error {
	fi, err := src.Stat()
	if err != nil {
		return fmt.Errorf("copy %s: %w", v.Loc, err)
	}
	if err := sparse.Copy(dst, src, v.SizeFrom(fi.Size())); err != nil {
		return fmt.Errorf("copy %s: %w", v.Loc, err)
	}
	undo := v.undo
	if v.at != nil {
		later, err := v.at.catchUp()
		if err != nil {
			return err
		}
		if l := later[v.Ino]; len(l) > 0 {
			undo = make([]undoRef, 0, len(l)+len(v.undo))
			for i := len(l) - 1; i >= 0; i-- {
				undo = append(undo, l[i])
			}
			undo = append(undo, v.undo...)
		}
	}
	return putBack(j, undo, dst)
}

// catchUp reads the records appended since a's last look, and returns
// the data and attribute records from upTo on, by inode, oldest first.
// Each record is read once, however many copies are made.
func (a *At) catchUp() (map[uint64][]undoRef, error) {
	now := a.j.NextSeq()
	if now <= a.caught {
		return a.later, nil
	}
	if a.later == nil {
		a.later = map[uint64][]undoRef{}
	}
	err := a.j.Scan(a.caught, now, false, func(r *journal.Record) error {
		if ref, ok := refOf(r); ok {
			a.later[r.Ino] = append(a.later[r.Ino], ref)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.caught = now
	return a.later, nil
}

// putBack applies undo (newest first) to dst: attribute records cut
// dst to their size, data records write their pre-image back, read
// from the journal in one pass.
func putBack(j *journal.Journal, undo []undoRef, dst *os.File) error {
	var seqs []uint64
	for _, r := range undo {
		if r.data {
			seqs = append(seqs, r.seq)
		}
	}
	next := 0 // undo[next] is the next to apply
	// upTo applies the attribute records newer than seq.
	upTo := func(seq uint64) error {
		for ; next < len(undo) && undo[next].seq > seq; next++ {
			if r := undo[next]; !r.data {
				if err := dst.Truncate(r.size); err != nil {
					return fmt.Errorf("apply record %d: %w", r.seq, err)
				}
			}
		}
		return nil
	}
	err := j.Records(seqs, func(r *journal.Record) error {
		if err := upTo(r.Seq); err != nil {
			return err
		}
		if err := writeBack(j, r, dst, nil); err != nil {
			return fmt.Errorf("apply record %d: %w", r.Seq, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return upTo(0)
}
