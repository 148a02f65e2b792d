package fs

import (
	"context"
	"os"
	"syscall"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// Removing an entry moves its inode aside (package aside) instead of
// destroying it: one rename, as cheap as the unlink, and undone by one
// rename back with content, attributes, xattrs and inode number intact.
// The record naming the aside entry is journaled before the move. A
// file created in the same epoch has no pre-image to keep (undo would
// delete it anyway), so it is really removed, once the kernel cannot
// be using it any more (keptWhileUsed). A directory always goes
// aside, even a new one: it costs no space, and undoing later changes
// may need to move things back into it before its creation is undone.

var _ = (gofs.NodeUnlinker)((*Node)(nil))

func (n *Node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, name, false)
}

var _ = (gofs.NodeRmdirer)((*Node)(nil))

func (n *Node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, name, true)
}

func (n *Node) remove(ctx context.Context, name string, dir bool) syscall.Errno {
	if n.hidden(name) {
		return syscall.ENOENT
	}
	rel, ok := n.child(name)
	if !ok {
		return syscall.ENOENT
	}
	pfd, done, e := n.inode()
	if e != 0 {
		return e
	}
	defer done()
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()

	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return errno(err)
	}
	isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	switch {
	case dir && !isDir:
		return syscall.ENOTDIR
	case !dir && isDir:
		return syscall.EISDIR
	case dir:
		// rename(2) would move a full directory; rmdir(2) must not.
		if e := emptyAt(pfd, name); e != 0 {
			return e
		}
	}
	if err := n.dirChange(c, pfd); err != nil {
		return c.fail(err)
	}

	id := n.idOf(&st)
	s := c.state(id)
	created := s.Created() && !isDir
	s.Unlock()

	a := n.fs.rec.aside
	ch := n.childNode(name)
	rec := &journal.Record{Kind: journal.KindRemove, Path: rel, Type: st.Mode & syscall.S_IFMT, Ino: id, Attr: journal.AttrOf(&st)}
	kept := ""
	switch {
	case !created:
		rec.Aside = a.NewName()
		kept = rec.Aside
	case ch != nil:
		kept = a.NewName() // see keptWhileUsed
	}
	if err := c.record(rec, nil); err != nil {
		return c.fail(err)
	}
	var err error
	switch {
	case kept != "":
		err = a.MoveIn(pfd, name, kept, &st)
	case dir:
		err = unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
	default:
		err = unix.Unlinkat(pfd, name, 0)
	}
	if err := c.did(err); err != nil {
		return c.fail(err)
	}
	if ch != nil && kept != "" {
		n.fs.orphans.place(ch, a.Path(kept))
	}
	if created && kept != "" {
		n.keptWhileUsed(kept)
	}
	return 0
}

// keptWhileUsed lets go of aside entry name, which keeps a file created
// in this epoch that the kernel still knows: undo does not need it, but
// a process may have it open (opens are not seen, see io.go), and an
// open file must stay usable after its last name goes. The entry is
// freed once the kernel forgets the node (Node.OnForget).
func (n *Node) keptWhileUsed(name string) {
	if err := n.fs.rec.aside.Drop(name); err != nil {
		n.fs.rec.log.Warn("freeing an aside entry", "name", name, "err", err)
	}
}

var _ = (gofs.NodeOnForgetter)((*Node)(nil))

// OnForget closes the node's cached descriptor, forgets that the node
// was mapped (writeback.go) and frees the aside entry that kept the
// node for the kernel, if the entry was only waiting for that
// (aside.Area.Drop). go-fuse may call it for a node
// still in use: a descriptor closed too early is opened again when
// needed, and FreeDeferred checks. go-fuse holds its locks here, so
// nothing may wait: the descriptor is closed at once if no request is
// using it, else later (later.go), like the aside entry.
func (n *Node) OnForget() {
	n.fs.writebacks.mapped.Delete(n)
	if !n.fs.fds.tryForget(n) {
		n.fs.later(func() { n.fs.fds.forget(n) })
	}
	if p := n.movedTo.Load(); p != nil {
		n.fs.later(func() { n.fs.freeKept(*p) })
	}
}

// freeKept frees the aside entry at backing-relative path p if it was
// kept only for a node the kernel no longer uses.
func (fs *filesystem) freeKept(p string) {
	name, ok := aside.Name(p)
	if !ok {
		return
	}
	if err := fs.rec.aside.FreeDeferred(name); err != nil {
		fs.rec.log.Warn("freeing an aside entry", "name", name, "err", err)
	}
}

// emptyAt checks that directory name in dir has no entries: ENOTEMPTY
// if it has.
func emptyAt(dir int, name string) syscall.Errno {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return errno(err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	empty, err := backing.EmptyDir(f)
	switch {
	case err != nil:
		return errno(err)
	case !empty:
		return syscall.ENOTEMPTY
	}
	return 0
}
