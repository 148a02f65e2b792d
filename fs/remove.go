package fs

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/cowfs/cowfs/aside"
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
	rel, abs, ok := n.child(name)
	if !ok {
		return syscall.ENOENT
	}
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()

	var st syscall.Stat_t
	if err := syscall.Lstat(abs, &st); err != nil {
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
		if empty, err := emptyDir(abs); err != nil {
			return errno(err)
		} else if !empty {
			return syscall.ENOTEMPTY
		}
	}
	if err := n.dirChange(c); err != nil {
		return errno(err)
	}

	id := n.idOf(&st)
	s := c.state(id)
	created := s.created && !isDir
	s.mu.Unlock()

	a := n.fs.rec.aside
	ch := n.childNode(name)
	rec := &journal.Record{Kind: journal.KindRemove, Path: rel, Type: st.Mode & syscall.S_IFMT, Ino: id, Attr: attrOf(&st)}
	kept := ""
	switch {
	case !created:
		rec.Aside = a.NewName()
		kept = rec.Aside
	case ch != nil:
		kept = a.NewName() // see keptWhileUsed
	}
	if err := c.record(rec, nil); err != nil {
		return errno(err)
	}
	var err error
	switch {
	case kept != "":
		err = a.MoveIn(abs, kept, &st)
	case dir:
		err = syscall.Rmdir(abs)
	default:
		err = syscall.Unlink(abs)
	}
	if err != nil {
		c.discard(rec)
		return errno(err)
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

// OnForget frees the aside entry that kept the node for the kernel, if
// the entry was only waiting for that (aside.Area.Drop). go-fuse may
// call it for a node still in use; FreeDeferred checks. It runs apart:
// go-fuse holds its locks here, and the check takes them.
func (n *Node) OnForget() {
	if p := n.movedTo.Load(); p != nil {
		go n.fs.freeKept(*p)
	}
}

// freeKept frees the aside entry at backing-relative path p if it was
// kept only for a node the kernel no longer uses.
func (fs *filesystem) freeKept(p string) {
	name, ok := strings.CutPrefix(p, aside.Prefix)
	if !ok {
		return
	}
	if err := fs.rec.aside.FreeDeferred(name); err != nil {
		fs.rec.log.Warn("freeing an aside entry", "name", name, "err", err)
	}
}

// emptyDir reports whether the directory at path has no entries.
func emptyDir(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if err == io.EOF {
		return true, nil
	}
	return false, err
}
