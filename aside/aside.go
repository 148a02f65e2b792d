// Package aside keeps the inodes that changes through the mount would
// destroy — unlinked files, removed directories, files replaced by a
// rename — in a hidden directory of the backing filesystem instead.
//
// Moving an inode aside is one rename(2): it costs what the unlink
// would have cost, keeps content, attributes, xattrs and the inode
// number itself (so hard links come back as hard links), and is undone
// by one rename back. The inode is freed for good when the record that
// moved it leaves the journal's window.
//
// The area is Dir/aside in the backing directory's root, on the same
// filesystem as the workspace (rename cannot cross filesystems). The
// mount hides Dir from the workspace's view. Names in the area are
// unique for the life of the workspace: a timestamp and a counter.
//
// # Whose area it is
//
// The workspace's contents come from anywhere, and the daemon runs as
// root, so the area is never reached by a path: Open resolves Dir and
// Dir/aside beneath the root descriptor following no symlink, and every
// later move, link, removal and listing is an *at call on those
// descriptors. A Dir that cowfs did not make — not a directory, not
// owned by the daemon's user, readable by others, or not carrying the
// journal's token in Dir/id — is refused: nothing in it is read,
// deleted or written (ErrForeign).
//
// An inode kept aside still counts in st_nlink. The area remembers how
// many of each inode's links it holds, so the mount can report the
// link count the workspace would see without it (0 for an open file
// that was deleted). Every move into or out of the area goes through
// the area's own methods, so that count cannot drift.
//
// This package knows nothing of FUSE or of the journal.
package aside

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
)

// Dir is the name, in the backing directory's root, of cowfs's private
// directory. The mount hides it.
const Dir = ".cowfs"

// areaDir is the aside area, relative to the backing root.
const areaDir = Dir + "/aside"

// Prefix is the backing-relative path of the area, with a final slash.
const Prefix = areaDir + "/"

// Private reports whether the backing-relative path p is cowfs's
// private directory or inside it.
func Private(p string) bool { return p == Dir || strings.HasPrefix(p, Dir+"/") }

// ErrForeign: the workspace holds a Dir that cowfs did not make for
// this journal. Nothing in it was touched.
var ErrForeign = errors.New("not made by cowfs for this journal")

const readme = `This directory belongs to cowfs. It holds files and directories that
were deleted or replaced through the cowfs mount during the turns still
in the rollback window, so a rollback can put them back. cowfs frees
them as turns leave the window. Do not edit it; remove it only together
with the workspace's journal.
`

// Area is the aside area of one backing directory.
type Area struct {
	dir int // O_PATH descriptor of Dir/aside

	base    string // time component of new names
	counter atomic.Uint64

	mu       sync.Mutex
	links    map[uint64]uint32 // inode number -> names of it held aside
	held     atomic.Int64      // len(links), for a lock-free fast path
	deferred map[string]uint64 // entries Drop found in use -> their inode numbers
	kept     map[uint64]uint32 // inode number -> names of it in deferred

	inUse atomic.Pointer[func(name string) bool]
}

// Open opens the aside area of the backing root rootFd (an O_PATH
// descriptor the caller keeps open), creating it if the root has no
// Dir, and counts the links it holds. token binds the area to one
// journal: a new Dir gets it, an existing one must carry it.
func Open(rootFd int, token string) (*Area, error) {
	priv, err := openPrivate(rootFd, token)
	if err != nil {
		return nil, err
	}
	defer unix.Close(priv)
	if err := ensureDir(priv, "aside"); err != nil {
		return nil, err
	}
	dir, err := unix.Openat(priv, "aside", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, foreign("%s cannot be opened as a directory without following a link (%v)", areaDir, err)
	}
	if err := writeFile(priv, "README", readme); err != nil {
		unix.Close(dir)
		return nil, err
	}
	a := &Area{dir: dir, base: strconv.FormatInt(time.Now().UnixNano(), 36), links: map[uint64]uint32{}}
	err = a.each(func(name string, st *unix.Stat_t) error {
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			a.links[st.Ino]++
		}
		return nil
	})
	if err != nil {
		unix.Close(dir)
		return nil, err
	}
	a.held.Store(int64(len(a.links)))
	return a, nil
}

// Close closes the area's descriptor.
func (a *Area) Close() error { return unix.Close(a.dir) }

// openPrivate opens Dir beneath the root, making it if absent, and
// checks that it is cowfs's for this journal (see the package doc).
//
// A new Dir is made with its token before anything goes into it. A
// crash in between leaves an empty Dir owned by the daemon's user and
// closed to others, which cannot steer anything: it is adopted.
func openPrivate(root int, token string) (int, error) {
	if err := ensureDir(root, Dir); err != nil {
		return -1, err
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(root, Dir, &how)
	if err != nil {
		return -1, foreign("it cannot be opened as a directory without following a link (%v)", err)
	}
	if err := checkPrivate(fd, token); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// checkPrivate checks the open Dir fd: a directory of the daemon's user,
// closed to others, whose id file holds token — or, freshly made, empty
// (then it gets token).
func checkPrivate(fd int, token string) error {
	st, err := backing.Fstat(fd)
	if err != nil {
		return fmt.Errorf("aside: %w", err)
	}
	if st.Uid != uint32(os.Geteuid()) {
		return foreign("it is owned by uid %d", st.Uid)
	}
	if st.Mode&0o077 != 0 {
		return foreign("its mode is %04o; cowfs makes it 0700", st.Mode&0o7777)
	}
	empty, err := emptyDir(fd)
	if err != nil {
		return fmt.Errorf("aside: list %s: %w", Dir, err)
	}
	if empty {
		return writeFile(fd, "id", token+"\n")
	}
	id, err := readFile(fd, "id")
	if err != nil {
		return foreign("it has no readable id file (%v)", err)
	}
	if strings.TrimSpace(id) != token {
		return foreign("its id does not match this workspace's journal")
	}
	return nil
}

// emptyDir reports whether the directory fd has no entries.
func emptyDir(fd int) (bool, error) {
	own, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(own), Dir)
	defer f.Close()
	return backing.EmptyDir(f)
}

func foreign(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrForeign, fmt.Sprintf(format, args...))
}

// ensureDir makes directory name in dir (mode 0700) unless something
// has that name.
func ensureDir(dir int, name string) error {
	if err := unix.Mkdirat(dir, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("aside: make %s: %w", name, err)
	}
	return nil
}

// writeFile replaces file name in dir with content, not following a
// symlink there.
func writeFile(dir int, name, content string) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("aside: write %s/%s: %w", Dir, name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("aside: write %s/%s: %w", Dir, name, err)
	}
	return nil
}

func readFile(dir int, name string) (string, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	b := make([]byte, 128)
	n, err := f.Read(b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}

// each calls fn for every entry of the area with its lstat.
func (a *Area) each(fn func(name string, st *unix.Stat_t) error) error {
	fd, err := unix.Openat(a.dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("aside: %w", err)
	}
	f := os.NewFile(uintptr(fd), areaDir)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("aside: list: %w", err)
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(a.dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		if err := fn(name, &st); err != nil {
			return err
		}
	}
	return nil
}

// NewName returns a name no inode in the area has had before.
func (a *Area) NewName() string {
	return a.base + "-" + strconv.FormatUint(a.counter.Add(1), 36)
}

// Path returns the backing-relative path of name.
func (a *Area) Path(name string) string { return areaDir + "/" + name }

// Name returns the entry name of a backing-relative path in the area.
func Name(p string) (string, bool) {
	name, ok := strings.CutPrefix(p, Prefix)
	return name, ok && validName(name)
}

func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

func checkName(name string) error {
	if !validName(name) {
		return fmt.Errorf("aside: invalid name %q", name)
	}
	return nil
}

// Stat returns the lstat of entry name.
func (a *Area) Stat(name string) (*unix.Stat_t, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(a.dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: a.Path(name), Err: err}
	}
	return &st, nil
}

// OpenEntry opens entry name with flags (O_NOFOLLOW implied).
func (a *Area) OpenEntry(name string, flags int) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	fd, err := unix.Openat(a.dir, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: a.Path(name), Err: err}
	}
	return fd, nil
}

// ErrReplaced: the entry a move was to take held another inode by the
// time the move ran — something renamed or exchanged names in the
// directory between the caller's check and the move. It wraps ESTALE,
// the errno the FUSE layer answers with.
var ErrReplaced = errors.New("entry replaced before it could be moved")

// MoveIn renames entry from in directory dir (a descriptor) into the
// area as name, never replacing an entry there. st is the lstat of the
// inode the caller checked at from.
//
// rename(2) takes names, not inodes: if from held another inode by the
// time it ran, that inode is moved back where it was and MoveIn fails
// with ErrReplaced, having changed nothing. Should the way back be taken
// meanwhile too, the inode stays in the area (counted, and freed with
// name's record) and the error says so.
func (a *Area) MoveIn(dir int, from, name string, st *unix.Stat_t) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Renameat2(dir, from, a.dir, name, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Errorf("aside: move %s aside: %w", from, err)
	}
	var got unix.Stat_t
	if err := unix.Fstatat(a.dir, name, &got, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		a.count(st.Mode, st.Ino, +1)
		return fmt.Errorf("aside: check %s after moving it aside: %w", from, err)
	}
	if got.Ino == st.Ino && got.Dev == st.Dev {
		a.count(st.Mode, st.Ino, +1)
		return nil
	}
	if err := unix.Renameat2(a.dir, name, dir, from, unix.RENAME_NOREPLACE); err != nil {
		a.count(got.Mode, got.Ino, +1)
		return fmt.Errorf("aside: %s held inode %d, not %d, when moved aside, and it cannot go back (%v): it is kept as %s: %w (%w)",
			from, got.Ino, st.Ino, err, a.Path(name), ErrReplaced, unix.ESTALE)
	}
	return fmt.Errorf("aside: %s held inode %d, not %d, when moved aside; put back: %w (%w)",
		from, got.Ino, st.Ino, ErrReplaced, unix.ESTALE)
}

// LinkIn makes name in the area a hard link to the non-directory from
// in directory dir, so the inode survives from being replaced.
func (a *Area) LinkIn(dir int, from, name string, st *unix.Stat_t) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Linkat(dir, from, a.dir, name, 0); err != nil {
		return fmt.Errorf("aside: keep %s aside: %w", from, err)
	}
	// As in MoveIn: the link is to whatever from held when linkat ran.
	var got unix.Stat_t
	if err := unix.Fstatat(a.dir, name, &got, unix.AT_SYMLINK_NOFOLLOW); err == nil && (got.Ino != st.Ino || got.Dev != st.Dev) {
		if err := unix.Unlinkat(a.dir, name, 0); err != nil {
			a.count(got.Mode, got.Ino, +1)
			return fmt.Errorf("aside: %s held inode %d, not %d, when kept aside, and %s cannot be removed (%v): %w (%w)",
				from, got.Ino, st.Ino, a.Path(name), err, ErrReplaced, unix.ESTALE)
		}
		return fmt.Errorf("aside: %s held inode %d, not %d, when kept aside: %w (%w)", from, got.Ino, st.Ino, ErrReplaced, unix.ESTALE)
	}
	a.count(st.Mode, st.Ino, +1)
	return nil
}

// LinkFd makes name in the area a hard link to the inode descriptor fd
// holds (linkat AT_EMPTY_PATH: an O_TMPFILE file, say).
func (a *Area) LinkFd(fd int, name string, st *unix.Stat_t) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Linkat(fd, "", a.dir, name, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("aside: keep %s: %w", name, err)
	}
	a.count(st.Mode, st.Ino, +1)
	return nil
}

// MoveOut renames entry name back to to in directory dir, never
// replacing what is there. st is the lstat of the entry.
func (a *Area) MoveOut(name string, dir int, to string, st *unix.Stat_t) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Renameat2(a.dir, name, dir, to, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Errorf("aside: move %s back: %w", name, err)
	}
	a.count(st.Mode, st.Ino, -1)
	return nil
}

// SetInUse tells the area how to know an entry the kernel may still
// use: an open file whose names were all removed lives on in its entry,
// and freeing the entry would cut the file off from the process that
// has it open.
func (a *Area) SetInUse(inUse func(name string) bool) { a.inUse.Store(&inUse) }

// Drop frees name for good; while it is in use (SetInUse), only once
// FreeDeferred is called for it (or at the next start's Sweep). A name
// already gone is not an error.
func (a *Area) Drop(name string) error {
	// Check and defer under mu, so that a FreeDeferred for name waits.
	a.mu.Lock()
	if f := a.inUse.Load(); f != nil && (*f)(name) {
		a.deferLocked(name)
		a.mu.Unlock()
		return nil
	}
	a.undeferLocked(name)
	a.mu.Unlock()
	return a.drop(name)
}

// DropLater is Drop for an entry the caller knows to be in use, before
// whatever tells in-use knows it.
func (a *Area) DropLater(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deferLocked(name)
}

func (a *Area) deferLocked(name string) {
	if a.deferred == nil {
		a.deferred, a.kept = map[string]uint64{}, map[uint64]uint32{}
	}
	if _, ok := a.deferred[name]; ok {
		return
	}
	var st unix.Stat_t
	ino := uint64(0) // gone already: it keeps nothing
	if checkName(name) == nil && unix.Fstatat(a.dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		ino = st.Ino
		a.kept[ino]++
	}
	a.deferred[name] = ino
}

// undeferLocked forgets that name was deferred.
func (a *Area) undeferLocked(name string) {
	ino, ok := a.deferred[name]
	if !ok {
		return
	}
	delete(a.deferred, name)
	if ino == 0 {
		return
	}
	if a.kept[ino]--; a.kept[ino] == 0 {
		delete(a.kept, ino)
	}
}

// KeptForUse returns how many names of inode ino the area holds only
// for the kernel (Drop deferred them): names no record gives, which a
// rollback is not to count as the inode's own (package rollback: a
// tree holding a file git linked to its object name and unlinked from
// its temporary one, still open, goes aside whole).
func (a *Area) KeptForUse(ino uint64) uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.kept[ino]
}

// FreeDeferred frees name if Drop deferred it and it is no longer in
// use.
func (a *Area) FreeDeferred(name string) error {
	a.mu.Lock()
	_, free := a.deferred[name]
	if f := a.inUse.Load(); free && f != nil && (*f)(name) {
		free = false
	}
	if free {
		a.undeferLocked(name)
	}
	a.mu.Unlock()
	if !free {
		return nil
	}
	return a.drop(name)
}

func (a *Area) drop(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(a.dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("aside: %w", err)
	}
	if err := backing.RemoveAll(a.dir, name); err != nil {
		return fmt.Errorf("aside: drop %s: %w", name, err)
	}
	a.count(st.Mode, st.Ino, -1)
	return nil
}

func (a *Area) count(mode uint32, ino uint64, d int) {
	if mode&syscall.S_IFMT == syscall.S_IFDIR {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := int(a.links[ino]) + d
	if n <= 0 {
		delete(a.links, ino)
	} else {
		a.links[ino] = uint32(n)
	}
	a.held.Store(int64(len(a.links)))
}

// Links returns how many names of inode ino the area holds.
func (a *Area) Links(ino uint64) uint32 {
	if a.held.Load() == 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.links[ino]
}

// Sweep frees every entry of the area that keep does not claim, and
// returns how many it freed: what a crash left between forgetting the
// records that named entries and freeing them. It must run before the
// mount serves requests, when no new entry can appear.
func (a *Area) Sweep(keep func(name string) bool) (int, error) {
	n := 0
	err := a.each(func(name string, _ *unix.Stat_t) error {
		if keep(name) {
			return nil
		}
		if err := a.drop(name); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
