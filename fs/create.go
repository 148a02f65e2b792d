package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

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

func (n *Node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	tn, ok := target.(*Node)
	if !ok {
		return nil, syscall.EXDEV
	}
	to, ok := tn.rel()
	if !ok {
		return nil, syscall.EXDEV // no name left and not kept aside: nothing to link from
	}
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	rec, e := n.newEntry(c, name, tn.StableAttr().Mode&syscall.S_IFMT, to)
	if e != 0 {
		return nil, e
	}
	ch, e := n.LoopbackNode.Link(ctx, target, name, out)
	if e != 0 {
		c.discard(rec)
		return nil, e
	}
	n.fixNlink(&out.Attr)
	return ch, 0
}

var _ = (gofs.NodeTmpfiler)((*Node)(nil))

// Tmpfile declines O_TMPFILE: a file in no directory has no path to serve
// it through, and there are no handles (io.go). The kernel then stops
// asking, and programs fall back to a named temporary file.
func (n *Node) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.ENOSYS
}
