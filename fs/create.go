package fs

import (
	"context"
	"fmt"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
)

// Creating an entry destroys nothing; its pre-image is "did not exist",
// journaled first so that a rollback removes it. The parent directory's
// attributes are journaled before its first entry change in an epoch,
// so a rollback can put its times back.

// newEntry journals that name in n is about to be created, as an entry
// of type typ (or, for a hard link, as a new name of the inode at
// linkTo). It returns the record, to be withdrawn if the creation fails.
func (n *Node) newEntry(c *change, name string, typ uint32, linkTo string) (*journal.Record, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.EPERM
	}
	rel, _, ok := n.child(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	if err := n.dirChange(c); err != nil {
		return nil, errno(err)
	}
	rec := &journal.Record{Kind: journal.KindCreate, Path: rel, Type: typ}
	if linkTo != "" {
		rec.Kind, rec.Path2 = journal.KindLink, linkTo
	}
	if err := c.record(rec, nil); err != nil {
		return nil, errno(err)
	}
	return rec, 0
}

// created finishes a creation: withdraw the record if it failed, or note
// the new inode so changes to it in this epoch journal nothing.
func (n *Node) created(c *change, rec *journal.Record, ch *gofs.Inode, e syscall.Errno) {
	if e != 0 {
		c.discard(rec)
		return
	}
	c.markCreated(ch.StableAttr().Ino)
}

var _ = (gofs.NodeCreater)((*Node)(nil))

func (n *Node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	rec, e := n.newEntry(c, name, syscall.S_IFREG, "")
	if e != 0 {
		return nil, nil, 0, e
	}
	// Always O_EXCL: a name that exists must not be truncated behind the
	// journal's back.
	ch, fh, fl, e := n.LoopbackNode.Create(ctx, name, flags|syscall.O_EXCL, mode, out)
	if e == syscall.EEXIST {
		// The kernel had a stale negative entry: the name exists.
		c.discard(rec)
		if flags&syscall.O_EXCL != 0 {
			return nil, nil, 0, syscall.EEXIST
		}
		return n.createExisting(ctx, c, name, flags, out)
	}
	n.created(c, rec, ch, e)
	if e != 0 {
		return nil, nil, 0, e
	}
	// No handle: the kernel would never release it (io.go).
	fh.(gofs.FileReleaser).Release(ctx)
	n.fixNlink(&out.Attr)
	return ch, nil, n.openFlags(fl), 0
}

// createExisting answers a CREATE for a name that exists as an OPEN of
// it would be answered, journaling a truncation first.
func (n *Node) createExisting(ctx context.Context, c *change, name string, flags uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	ch, e := n.LoopbackNode.Lookup(ctx, name, out)
	if e != 0 {
		return nil, nil, 0, e
	}
	cn, ok := ch.Operations().(*Node)
	if !ok {
		return nil, nil, 0, syscall.EIO
	}
	if e := cn.open(c, flags&^(syscall.O_CREAT|syscall.O_EXCL)); e != 0 {
		return nil, nil, 0, e
	}
	n.fixNlink(&out.Attr)
	return ch, nil, n.openFlags(0), 0
}

var _ = (gofs.NodeMkdirer)((*Node)(nil))

func (n *Node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, name, syscall.S_IFDIR, func() (*gofs.Inode, syscall.Errno) {
		return n.LoopbackNode.Mkdir(ctx, name, mode, out)
	})
}

// make journals the creation of name, of type typ, then has mk create
// it.
func (n *Node) make(ctx context.Context, name string, typ uint32, mk func() (*gofs.Inode, syscall.Errno)) (*gofs.Inode, syscall.Errno) {
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	rec, e := n.newEntry(c, name, typ, "")
	if e != 0 {
		return nil, e
	}
	ch, e := mk()
	n.created(c, rec, ch, e)
	return ch, e
}

var _ = (gofs.NodeMknoder)((*Node)(nil))

func (n *Node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, name, mode&syscall.S_IFMT, func() (*gofs.Inode, syscall.Errno) {
		return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	})
}

var _ = (gofs.NodeSymlinker)((*Node)(nil))

func (n *Node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, name, syscall.S_IFLNK, func() (*gofs.Inode, syscall.Errno) {
		return n.LoopbackNode.Symlink(ctx, target, name, out)
	})
}

var _ = (gofs.NodeLinker)((*Node)(nil))

// Link links target from its own path (Node.rel), which also names a
// file that has no name left but is kept aside: an O_TMPFILE file, or
// an open file whose names were all removed (linkat with AT_EMPTY_PATH).
// go-fuse's loopback has no path for those. Such a link is journaled as
// a creation: what it links from is not in the workspace.
func (n *Node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	tn, ok := target.(*Node)
	if !ok {
		return nil, syscall.EXDEV
	}
	from, ok := tn.rel()
	if !ok {
		return nil, syscall.ENOENT // no name left and not kept aside
	}
	linkTo := from
	if strings.HasPrefix(from, aside.Prefix) {
		linkTo = ""
	}
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	rec, e := n.newEntry(c, name, tn.StableAttr().Mode&syscall.S_IFMT, linkTo)
	if e != 0 {
		return nil, e
	}
	_, abs, _ := n.child(name)
	var st syscall.Stat_t
	err := syscall.Link(tn.abs(from), abs)
	if err == nil {
		if err = syscall.Lstat(abs, &st); err != nil {
			syscall.Unlink(abs)
		}
	}
	if err != nil {
		c.discard(rec)
		return nil, errno(err)
	}
	// The same StableAttr: go-fuse hands the kernel target's inode.
	ch := n.NewInode(ctx, &gofs.LoopbackNode{RootData: n.RootData}, tn.StableAttr())
	out.Attr.FromStat(&st)
	n.fixNlink(&out.Attr)
	return ch, 0
}

var _ = (gofs.NodeTmpfiler)((*Node)(nil))

// Tmpfile creates a file in no directory (O_TMPFILE). It has no name in
// the workspace, so nothing is journaled, and it is marked created so
// writes to it journal nothing. Since requests reach it by path (io.go),
// it gets one in the aside area, under a name no record claims, freed
// once the kernel forgets the node (aside.Area.DropLater). The kernel
// itself refuses to link a file made with O_EXCL.
func (n *Node) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	ch, fh, _, e := n.LoopbackNode.Tmpfile(ctx, flags&^syscall.O_EXCL, mode, out)
	if e != 0 {
		return nil, nil, 0, e
	}
	f, err := wrapFile(fh)
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	defer f.Release(ctx)
	st, err := f.fstat()
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	a := n.fs.rec.aside
	name := a.NewName()
	if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.fd), n.fs.root, a.Path(name), unix.AT_SYMLINK_FOLLOW); err != nil {
		return nil, nil, 0, errno(err)
	}
	a.Added(st.Mode, st.Ino)
	c.markCreated(ch.StableAttr().Ino)
	if cn, ok := ch.Operations().(*Node); ok {
		n.fs.orphans.place(cn, a.Path(name))
	}
	a.DropLater(name)
	return ch, nil, n.openFlags(0), 0
}
