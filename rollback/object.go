package rollback

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
)

// Acting on what was checked.
//
// The backing directory can change while a rollback runs: behind a
// --mountpoint view, or under an offline rollback, any process that may
// write a directory of the workspace can rename, exchange or replace
// its entries at any moment. A step that checked the inode at a path and
// then named the path again would act on whatever is there by then: a
// racer exchanging two names between the check and the act gets a chown,
// chmod, write or truncation applied to a file of its choice, or a
// secret pre-image written into its own file.
//
// So a step never names a path twice. An in-place step opens the object
// once, beneath the root and following no link (O_PATH|O_NOFOLLOW),
// checks the identity of what it got with fstat, and acts through that
// descriptor: fchownat/fchmodat/utimensat with AT_EMPTY_PATH, the xattr
// calls and a read-write reopen through its /proc/self/fd magic link,
// which names exactly the inode the descriptor holds. Whatever happens
// to the path afterwards, the act lands on the inode that was checked.
//
// A rename names two entries, and the kernel has no "rename this inode"
// call. A moving step therefore opens the directories once (so a racer
// swapping a directory above them changes nothing), checks the entry it
// moves with fstatat on its directory's descriptor, renames, and checks
// the entry again where it arrived. If another object moved — exchanged
// in during the instant between the two calls — it is moved back where
// it came from and the step is skipped, reported as a race: the report
// never says a path was restored when something else happened.

// object is an inode a step opened once and checked: every later call
// on it goes through fd.
type object struct {
	fd int          // O_PATH|O_NOFOLLOW descriptor
	st *unix.Stat_t // its fstat when opened
	id uint64       // its identity (journal.InodeID)
}

func (o *object) close() { unix.Close(o.fd) }

// typ returns the object's file type bits.
func (o *object) typ() uint32 { return o.st.Mode & syscall.S_IFMT }

// openAt opens what is at p; ok is false if nothing is.
func (x *executor) openAt(p string) (*object, bool, error) {
	fd, err := x.env.Tree.OpenFd(p, unix.O_PATH, 0)
	if unreachable(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	st, err := backing.Fstat(fd)
	if err != nil {
		unix.Close(fd)
		return nil, false, err
	}
	return &object{fd: fd, st: st, id: x.identity(st)}, true, nil
}

// openHeld opens the object at p and checks that it is identity id; the
// caller closes it.
func (x *executor) openHeld(p string, id uint64) (*object, error) {
	o, ok, err := x.openAt(p)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, skipError{reasonMismatch, fmt.Sprintf("%s is missing", p)}
	}
	if o.id != id {
		o.close()
		return nil, skipError{reasonMismatch, fmt.Sprintf("%s is inode %d, not %d", p, o.id, id)}
	}
	return o, nil
}

// file reopens a regular file read-write through its descriptor: the
// same inode, whatever is at its path now.
func (o *object) file(name string) (*os.File, error) {
	if o.typ() != syscall.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	fd, err := backing.Reopen(o.fd, unix.O_RDWR|unix.O_NOATIME)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// slot is a name in a directory the step holds open: what renames act
// on. A path in the aside area is an entry of the area, which the area
// reaches through its own descriptor.
type slot struct {
	dir  int    // O_PATH descriptor of the directory; -1 if it is missing or the slot is in the area
	name string // one component
	path string // the backing-relative path, for records and messages
	// dirPath is the directory's backing-relative path ("" for the
	// root).
	dirPath string
	area    string // the entry's name, for a slot in the aside area
}

// openSlot opens the directory holding p, beneath the root. A missing
// directory gives an empty slot that nothing can be moved into.
func (x *executor) openSlot(p string) (*slot, error) {
	if name, ok := aside.Name(p); ok {
		return &slot{dir: -1, name: name, path: p, area: name}, nil
	}
	d := path.Dir(p)
	if d == "." {
		d = ""
	}
	sl := &slot{dir: -1, name: path.Base(p), path: p, dirPath: d}
	dir, name, err := x.env.Tree.Parent(p)
	if unreachable(err) {
		return sl, nil
	}
	if err != nil {
		return nil, err
	}
	sl.dir, sl.name = dir, name
	return sl, nil
}

func (s *slot) close() {
	if s.dir >= 0 {
		unix.Close(s.dir)
	}
}

// statSlot returns what slot s holds now and its identity; ok is false
// if nothing is there.
func (x *executor) statSlot(s *slot) (*unix.Stat_t, uint64, bool, error) {
	var st *unix.Stat_t
	var err error
	switch {
	case s.area != "":
		st, err = x.env.Aside.Stat(s.area)
	case s.dir < 0:
		return nil, 0, false, nil
	default:
		st = new(unix.Stat_t)
		if e := unix.Fstatat(s.dir, s.name, st, unix.AT_SYMLINK_NOFOLLOW); e != nil {
			err = &os.PathError{Op: "lstat", Path: s.path, Err: e}
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	return st, x.identity(st), true, nil
}

// openSlots opens the slots of a and b.
func (x *executor) openSlots(a, b string) (*slot, *slot, error) {
	sa, err := x.openSlot(a)
	if err != nil {
		return nil, nil, err
	}
	sb, err := x.openSlot(b)
	if err != nil {
		sa.close()
		return nil, nil, err
	}
	return sa, sb, nil
}

// unreachable reports whether err says that a path leads to nothing
// beneath the root: a directory on the way missing, not a directory, or
// a symlink (which resolution beneath the root never follows). To a
// step that is a path not as the journal says, never a failure.
func unreachable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EXDEV)
}

// errRaced is the skip of a step whose object was replaced between its
// check and its act.
func errRaced(detail string) error { return skipError{reasonRaced, detail} }
