package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
)

var _ = (gofs.NodeRenamer)((*Node)(nil))

// Rename journals the rename itself, so undo can invert it (a directory
// of any size goes back in one rename). A target it replaces is kept
// aside first: a file by a hard link into the aside area, so the target
// name never disappears (rename stays atomic for readers); an empty
// directory by moving it, since directories cannot be hard-linked.
func (n *Node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*Node)
	if !ok {
		return syscall.EXDEV
	}
	if n.hidden(name) {
		return syscall.ENOENT
	}
	if np.hidden(newName) {
		return syscall.EPERM
	}
	rel1, ok1 := n.child(name)
	rel2, ok2 := np.child(newName)
	if !ok1 || !ok2 {
		return syscall.ENOENT
	}
	d1, done1, e := n.inode()
	if e != 0 {
		return e
	}
	defer done1()
	d2, done2, e := np.inode()
	if e != 0 {
		return e
	}
	defer done2()
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()

	var st1, st2 unix.Stat_t
	if err := unix.Fstatat(d1, name, &st1, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return errno(err)
	}
	exists := unix.Fstatat(d2, newName, &st2, unix.AT_SYMLINK_NOFOLLOW) == nil
	exchange := flags&unix.RENAME_EXCHANGE != 0
	switch {
	case exchange && !exists:
		return syscall.ENOENT
	case flags&unix.RENAME_NOREPLACE != 0 && exists:
		return syscall.EEXIST
	case exists && st1.Ino == st2.Ino && st1.Dev == st2.Dev:
		// Two names of one inode: rename(2) does nothing.
		return 0
	}
	rec := &journal.Record{Kind: journal.KindRename, Path: rel1, Path2: rel2, Flags: flags,
		Type: st1.Mode & syscall.S_IFMT, Ino: n.idOf(&st1)}
	c.stamp(rec.Ino) // its ctime moves
	if exchange {
		rec.Ino2 = n.idOf(&st2) // the other object, as a rollback's exchange records it
		c.stamp(rec.Ino2)
	}

	replace := exists && !exchange
	kept := "" // aside entry of a replaced new file the kernel knows
	targetIsDir := st2.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if replace {
		if e := replaceable(&st1, &st2, d2, newName); e != 0 {
			return e
		}
		s := c.state(n.idOf(&st2))
		created := s.created && !targetIsDir // see remove.go: directories always go aside
		s.mu.Unlock()
		// Ino2 says a target was replaced; an Aside keeps it, unless it
		// was new in this epoch and goes for good.
		rec.Ino2 = n.idOf(&st2)
		if !created {
			rec.Aside, rec.Attr = n.fs.rec.aside.NewName(), journal.AttrOf(&st2)
		}
		if created && np.childNode(newName) != nil {
			kept = n.fs.rec.aside.NewName() // see keptWhileUsed
		}
	}
	if err := n.dirChange(c, d1); err != nil {
		return errno(err)
	}
	if np != n {
		if err := np.dirChange(c, d2); err != nil {
			return errno(err)
		}
	}
	if err := c.record(rec, nil); err != nil {
		return errno(err)
	}
	// RENAME_WHITEOUT leaves a whiteout (a character device 0:0 of the
	// caller's) at the old name: a creation after the rename, so undo
	// removes it before it renames back.
	var whiteout *journal.Record
	if flags&unix.RENAME_WHITEOUT != 0 {
		whiteout = &journal.Record{Kind: journal.KindCreate, Path: rel1, Type: syscall.S_IFCHR}
		if err := c.record(whiteout, nil); err != nil {
			c.discard(rec)
			return errno(err)
		}
	}
	a := n.fs.rec.aside
	keep := rec.Aside
	if keep == "" {
		keep = kept
	}
	if keep != "" {
		var err error
		if targetIsDir {
			err = a.MoveIn(d2, newName, keep, &st2)
		} else {
			err = a.LinkIn(d2, newName, keep, &st2)
		}
		if err != nil {
			c.discard(rec)
			return errno(err)
		}
	}
	rename := func() error { return unix.Renameat2(d1, name, d2, newName, uint(flags)) }
	var err error
	if whiteout != nil {
		err = asCaller(c.who(), rename) // the whiteout is the caller's, as natively
	} else {
		err = rename()
	}
	if err != nil {
		if whiteout != nil {
			c.discard(whiteout)
		}
		if keep != "" {
			// Put the target back as it was; the rename never happened.
			if targetIsDir {
				a.MoveOut(keep, d2, newName, &st2)
			} else {
				a.Drop(keep)
			}
		}
		c.discard(rec)
		return errno(err)
	}
	if old := np.childNode(newName); old != nil && keep != "" {
		n.fs.orphans.place(old, a.Path(keep))
	}
	if kept != "" {
		n.keptWhileUsed(kept)
	}
	if whiteout != nil {
		var wst unix.Stat_t
		if unix.Fstatat(d1, name, &wst, unix.AT_SYMLINK_NOFOLLOW) == nil {
			c.markCreated(n.idOf(&wst))
		}
	}
	return 0
}

// replaceable checks what rename(2) checks before it replaces target
// (stat st2, name in directory dir) by source (st1), so that nothing is
// moved aside for a rename that then fails.
func replaceable(st1, st2 *unix.Stat_t, dir int, name string) syscall.Errno {
	dir1 := st1.Mode&syscall.S_IFMT == syscall.S_IFDIR
	dir2 := st2.Mode&syscall.S_IFMT == syscall.S_IFDIR
	switch {
	case dir1 && !dir2:
		return syscall.ENOTDIR
	case !dir1 && dir2:
		return syscall.EISDIR
	case dir2:
		return emptyAt(dir, name)
	}
	return 0
}
