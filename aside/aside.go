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
// An inode kept aside still counts in st_nlink. The area remembers how
// many of each inode's links it holds, so the mount can report the
// link count the workspace would see without it (0 for an open file
// that was deleted).
//
// This package knows nothing of FUSE or of the journal.
package aside

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Dir is the name, in the backing directory's root, of cowfs's private
// directory. The mount hides it.
const Dir = ".cowfs"

// areaDir is the aside area, relative to the backing root.
const areaDir = Dir + "/aside"

const readme = `This directory belongs to cowfs. It holds files and directories that
were deleted or replaced through the cowfs mount during the turns still
in the rollback window, so a rollback can put them back. cowfs frees
them as turns leave the window. Do not edit it; remove it only together
with the workspace's journal.
`

// Area is the aside area of one backing directory.
type Area struct {
	root string // backing root, as a path the process can use

	base    string // time component of new names
	counter atomic.Uint64

	mu       sync.Mutex
	links    map[uint64]uint32 // inode number -> names of it held aside
	held     atomic.Int64      // len(links), for a lock-free fast path
	deferred map[string]bool   // entries Drop found in use

	inUse atomic.Pointer[func(name string) bool]
}

// Open opens (creating if needed) the aside area under root and counts
// the links it holds.
func Open(root string) (*Area, error) {
	dir := filepath.Join(root, areaDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("aside: %w", err)
	}
	if err := os.WriteFile(filepath.Join(root, Dir, "README"), []byte(readme), 0o600); err != nil {
		return nil, fmt.Errorf("aside: %w", err)
	}
	a := &Area{
		root:  root,
		base:  strconv.FormatInt(time.Now().UnixNano(), 36),
		links: map[uint64]uint32{},
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("aside: %w", err)
	}
	for _, e := range entries {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dir, e.Name()), &st); err == nil && st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			a.links[st.Ino]++
		}
	}
	a.held.Store(int64(len(a.links)))
	return a, nil
}

// NewName returns a name no inode in the area has had before.
func (a *Area) NewName() string {
	return a.base + "-" + strconv.FormatUint(a.counter.Add(1), 36)
}

// Path returns the backing-relative path of name.
func (a *Area) Path(name string) string { return areaDir + "/" + name }

func (a *Area) abs(name string) (string, error) {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return "", fmt.Errorf("aside: invalid name %q", name)
	}
	return filepath.Join(a.root, areaDir, name), nil
}

// MoveIn renames the entry at path (an absolute path in the backing
// directory) into the area as name. st is its lstat.
func (a *Area) MoveIn(path, name string, st *syscall.Stat_t) error {
	dst, err := a.abs(name)
	if err != nil {
		return err
	}
	if err := syscall.Rename(path, dst); err != nil {
		return fmt.Errorf("aside: move %s aside: %w", path, err)
	}
	a.count(st.Mode, st.Ino, +1)
	return nil
}

// LinkIn makes name in the area a hard link to the non-directory at
// path, so the inode survives path being replaced.
func (a *Area) LinkIn(path, name string, st *syscall.Stat_t) error {
	dst, err := a.abs(name)
	if err != nil {
		return err
	}
	if err := syscall.Link(path, dst); err != nil {
		return fmt.Errorf("aside: keep %s aside: %w", path, err)
	}
	a.count(st.Mode, st.Ino, +1)
	return nil
}

// MoveOut renames name back to path (an absolute path in the backing
// directory). st is the lstat of the entry when it went in.
func (a *Area) MoveOut(name, path string, st *syscall.Stat_t) error {
	src, err := a.abs(name)
	if err != nil {
		return err
	}
	if err := syscall.Rename(src, path); err != nil {
		return fmt.Errorf("aside: move %s back: %w", name, err)
	}
	a.count(st.Mode, st.Ino, -1)
	return nil
}

// Added and Removed keep the link counts right when another package
// (rollback) moves an inode (stat st) into or out of the area itself.
// They take the inode's mode and number.
func (a *Area) Added(mode uint32, ino uint64)   { a.count(mode, ino, +1) }
func (a *Area) Removed(mode uint32, ino uint64) { a.count(mode, ino, -1) }

// Prefix is the backing-relative path of the area, with a final slash.
const Prefix = areaDir + "/"

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
		a.deferred = map[string]bool{}
	}
	a.deferred[name] = true
}

// FreeDeferred frees name if Drop deferred it and it is no longer in
// use.
func (a *Area) FreeDeferred(name string) error {
	a.mu.Lock()
	free := a.deferred[name]
	if f := a.inUse.Load(); free && f != nil && (*f)(name) {
		free = false
	}
	if free {
		delete(a.deferred, name)
	}
	a.mu.Unlock()
	if !free {
		return nil
	}
	return a.drop(name)
}

func (a *Area) drop(name string) error {
	p, err := a.abs(name)
	if err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil
		}
		return fmt.Errorf("aside: %w", err)
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		err = os.RemoveAll(p)
	} else {
		err = syscall.Unlink(p)
	}
	if err != nil && !errors.Is(err, syscall.ENOENT) {
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
	entries, err := os.ReadDir(filepath.Join(a.root, areaDir))
	if err != nil {
		return 0, fmt.Errorf("aside: %w", err)
	}
	n := 0
	for _, e := range entries {
		if keep(e.Name()) {
			continue
		}
		if err := a.drop(e.Name()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
