package fs

import (
	"context"
	"syscall"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
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
	replace := exists && !exchange
	if replace {
		if e := replaceable(&st1, &st2, d2, newName); e != 0 {
			return e
		}
	}
	rec := &journal.Record{Kind: journal.KindRename, Path: rel1, Path2: rel2, Flags: flags,
		Type: st1.Mode & syscall.S_IFMT, Ino: n.idOf(&st1)}
	c.stamp(rec.Ino) // its ctime moves (if the rename fails, fail forgets it)
	if exchange {
		rec.Ino2 = n.idOf(&st2) // the other object, as a rollback's exchange records it
		c.stamp(rec.Ino2)
	}

	kept := "" // aside entry of a replaced new file the kernel knows
	targetIsDir := st2.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if replace {
		s := c.state(n.idOf(&st2))
		created := s.Created() && !targetIsDir // see remove.go: directories always go aside
		s.Unlock()
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
		return c.fail(err)
	}
	if np != n {
		if err := np.dirChange(c, d2); err != nil {
			return c.fail(err)
		}
	}
	if err := c.record(rec, nil); err != nil {
		return c.fail(err)
	}
	// RENAME_WHITEOUT leaves a whiteout (a character device 0:0 of the
	// caller's) at the old name: a creation after the rename, so undo
	// removes it before it renames back.
	var whiteout *journal.Record
	if flags&unix.RENAME_WHITEOUT != 0 {
		whiteout = &journal.Record{Kind: journal.KindCreate, Path: rel1, Type: syscall.S_IFCHR}
		if err := c.record(whiteout, nil); err != nil {
			return c.fail(err)
		}
	}
	a := n.fs.rec.aside
	keep := rec.Aside
	if keep == "" {
		keep = kept
	}
	// Keeping the target aside changes nothing the workspace sees (a
	// file gets a second name in the private directory; a directory
	// leaves its name for the moment of the rename, and comes back if
	// the rename fails): if the rename fails, the records go.
	if keep != "" {
		var err error
		if targetIsDir {
			err = a.MoveIn(d2, newName, keep, &st2)
		} else {
			err = a.LinkIn(d2, newName, keep, &st2)
		}
		if err != nil {
			return c.fail(err)
		}
	}
	rename := func() error {
		if err := testHookRename(newName); err != nil {
			return err
		}
		return unix.Renameat2(d1, name, d2, newName, uint(flags))
	}
	var err error
	if whiteout != nil {
		err = asCaller(c.who(), rename) // the whiteout is the caller's, as natively
	} else {
		err = rename()
	}
	if err := c.did(err); err != nil {
		if keep != "" {
			np.unkeep(c, keep, newName, d2, &st2, targetIsDir, rec, whiteout)
		}
		return c.fail(err)
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

// unkeep puts back the target of a rename that failed: name in n
// (directory descriptor dir, lstat st) was kept aside as keep. A file's
// aside entry was a second name: dropping it leaves the workspace as
// it was (a name that cannot be dropped is freed by the next start's
// sweep, since no record names it). A directory was moved aside: if it
// cannot be moved back (something took its name meanwhile), it stays
// there, and what the workspace went through is its removal, journaled
// as one in place of the rename's records (renamed, and a whiteout or
// nil), so that a rollback recovers it and the sweep keeps it.
func (n *Node) unkeep(c *change, keep, name string, dir int, st *unix.Stat_t, isDir bool, renamed, whiteout *journal.Record) {
	a := n.fs.rec.aside
	if !isDir {
		if err := a.Drop(keep); err != nil {
			n.fs.rec.log.Warn("cannot drop the aside name of a failed rename's target", "path", renamed.Path2, "name", keep, "err", err)
		}
		return
	}
	err := a.MoveOut(keep, dir, name, st)
	if err == nil {
		return
	}
	n.fs.rec.log.Warn("a failed rename's target cannot be moved back; it stays aside, removed", "path", renamed.Path2, "err", err)
	// The directory and its parent changed, whatever happens next: the
	// change keeps its records, and stamps them alone.
	c.landed = true
	c.touched = append(c.touched[:0], n.StableAttr().Ino, renamed.Ino2)
	removed := &journal.Record{Kind: journal.KindRemove, Path: renamed.Path2, Type: syscall.S_IFDIR,
		Ino: renamed.Ino2, Attr: renamed.Attr, Aside: keep}
	if err := c.record(removed, nil); err != nil {
		// The rename's record names the entry, so the sweep keeps it.
		n.fs.rec.log.Error("cannot journal the removal of a failed rename's target", "path", renamed.Path2, "err", err)
		return
	}
	for _, rec := range []*journal.Record{renamed, whiteout} {
		if rec == nil {
			continue
		}
		if err := c.op.Discard(rec); err != nil {
			n.fs.rec.log.Warn("cannot withdraw the record of a failed rename", "seq", rec.Seq, "err", err)
		}
	}
	if old := n.childNode(name); old != nil {
		n.RmChild(name)
		n.fs.orphans.place(old, a.Path(keep))
	}
	n.fs.apart(func() { n.NotifyEntry(name) }) // once the rename's locks are let go
}

// testHookRename is called before each rename through the mount with
// the new name; an error it returns fails the rename in place of
// renameat2's.
var testHookRename = func(newName string) error { return nil }

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
