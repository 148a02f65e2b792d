package rollback

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/sparse"
)

// Version is what a path held at an earlier time, and where to read it
// today.
type Version struct {
	Exists bool
	Type   uint32 // S_IFMT bits
	Loc    string // backing-relative path of the object today (live or aside)
	Ino    uint64
	Undo   []*journal.Record // a regular file's Data and Attr records since then, newest first
}

// ErrNoPreimage: the journal cannot say what a path held.
var ErrNoPreimage = errors.New("no pre-image in the journal")

// At is the workspace as it was when a run of records began, for
// reading many paths of that time (a diff's files, an export's paths):
// the records are undone once, where Find undoes them all again for
// each path. A lookup costs the depth of its path, and a regular
// file's a pass over the records for its Data and Attr records — no
// index of them is built, so At holds no more than the records it is
// given.
type At struct {
	tree    *backing.Tree
	recs    []*journal.Record
	past    *past
	rootDev uint64
}

// NewAt returns the workspace as it was when recs began. recs are every
// record from that time to now, newest first, and must stay unchanged
// while At is used; asidePath maps an aside name to its
// backing-relative path; rootDev is the backing root's device.
func NewAt(t *backing.Tree, recs []*journal.Record, asidePath func(string) string, rootDev uint64) *At {
	p := newPast(asidePath)
	for _, r := range recs {
		s := slim(r)
		p.undo(&s)
	}
	return &At{tree: t, recs: recs, past: p, rootDev: rootDev}
}

// Find returns what path held when recs began (see NewAt).
func Find(t *backing.Tree, recs []*journal.Record, path string, asidePath func(string) string, rootDev uint64) (Version, error) {
	return NewAt(t, recs, asidePath, rootDev).Find(path)
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
	v := Version{Exists: true, Type: st.Mode & syscall.S_IFMT, Loc: e.loc, Ino: e.ino}
	if v.Ino == 0 {
		v.Ino = journal.InodeID(st.Dev, st.Ino, a.rootDev)
	}
	if v.Type != syscall.S_IFREG {
		return v, nil // no content to put back
	}
	for _, r := range a.recs {
		if r.Ino == v.Ino && (r.Kind == journal.KindData || r.Kind == journal.KindAttr) {
			v.Undo = append(v.Undo, r)
		}
	}
	return v, nil
}

// Materialize writes the content v had into dst, an empty file: its
// content today with v.Undo applied, newest first, so each byte ends
// as its oldest pre-image.
func (v Version) Materialize(t *backing.Tree, j *journal.Journal, dst *os.File) error {
	src, err := v.Open(t)
	if err != nil {
		return err
	}
	defer src.Close()
	return v.MaterializeFrom(src, j, dst)
}

// Open opens the object v reads today, for MaterializeFrom.
func (v Version) Open(t *backing.Tree) (*os.File, error) {
	if v.Type != syscall.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", v.Loc)
	}
	return t.Open(v.Loc, os.O_RDONLY, 0)
}

// Size is the size v had: its size today (src's), as the oldest
// attribute record since then says it was.
func (v Version) Size(today int64) int64 {
	size := today
	for _, r := range v.Undo {
		if r.Kind == journal.KindAttr {
			size = r.Attr.Size // newest first: the last one is the oldest
		}
	}
	return size
}

// MaterializeFrom is Materialize from src, v's object opened by Open.
// It copies only what v's size keeps of src — a file that has grown
// since costs what it held, not what it holds — and keeps holes holes:
// a sparse file costs dst its data, not its size.
func (v Version) MaterializeFrom(src *os.File, j *journal.Journal, dst *os.File) error {
	fi, err := src.Stat()
	if err != nil {
		return fmt.Errorf("copy %s: %w", v.Loc, err)
	}
	if err := sparse.Copy(dst, src, v.Size(fi.Size())); err != nil {
		return fmt.Errorf("copy %s: %w", v.Loc, err)
	}
	for _, r := range v.Undo {
		var err error
		switch r.Kind {
		case journal.KindData:
			err = writeBack(j, r, dst, nil)
		case journal.KindAttr:
			err = dst.Truncate(r.Attr.Size)
		}
		if err != nil {
			return fmt.Errorf("apply record %d: %w", r.Seq, err)
		}
	}
	return nil
}
