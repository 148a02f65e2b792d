package fs

import (
	"context"
	"io"
	"os"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/cowfs/cowfs/journal"
)

// Removing an entry moves its inode aside (package aside) instead of
// destroying it: one rename, as cheap as the unlink, and undone by one
// rename back with content, attributes, xattrs and inode number intact.
// The record naming the aside entry is journaled before the move. A
// file created in the same epoch has no pre-image to keep (undo would
// delete it anyway), so it is really removed. A directory always goes
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

	rec := &journal.Record{Kind: journal.KindRemove, Path: rel, Type: st.Mode & syscall.S_IFMT, Ino: id, Attr: attrOf(&st)}
	if !created {
		rec.Aside = n.fs.rec.aside.NewName()
	}
	if err := c.record(rec, nil); err != nil {
		return errno(err)
	}
	var err error
	switch {
	case !created:
		err = n.fs.rec.aside.MoveIn(abs, rec.Aside, &st)
	case dir:
		err = syscall.Rmdir(abs)
	default:
		err = syscall.Unlink(abs)
	}
	if err != nil {
		c.discard(rec)
		return errno(err)
	}
	if ch := n.childNode(name); ch != nil && !created {
		n.fs.orphans.place(ch, n.fs.rec.aside.Path(rec.Aside))
	}
	return 0
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
