package fs

import (
	"context"
	"errors"
	"syscall"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// Creating an entry destroys nothing; its pre-image is "did not exist",
// journaled first so that a rollback removes it. The parent directory's
// attributes are journaled before its first entry change in an epoch,
// so a rollback can put its times back. Entries are made with the
// caller's credentials (creds.go).

// newEntry journals that name in n (directory descriptor dir) is about
// to be created, as an entry of type typ (or, for a hard link, as a new
// name of the inode at linkTo). If the creation fails, change.fail
// withdraws the record, and the directory's first touch with it.
func (n *Node) newEntry(c *change, dir int, name string, typ uint32, linkTo string, linkIno uint64) syscall.Errno {
	if n.hidden(name) {
		return syscall.EPERM
	}
	rel, ok := n.child(name)
	if !ok {
		return syscall.ENOENT
	}
	if err := n.dirChange(c, dir); err != nil {
		return c.fail(err)
	}
	rec := &journal.Record{Kind: journal.KindCreate, Path: rel, Type: typ}
	if linkTo != "" {
		// The inode linked: its link count and ctime change too, under
		// all its names (package rescan must know).
		rec.Kind, rec.Path2, rec.Ino = journal.KindLink, linkTo, linkIno
	}
	if err := c.record(rec, nil); err != nil {
		return c.fail(err)
	}
	return 0
}

// dirChange journals directory n's attributes (descriptor dir) before
// its first entry change in this epoch, so undo can put its times back.
func (n *Node) dirChange(c *change, dir int) error {
	rel, ok := n.rel()
	if !ok {
		return syscall.ENOENT
	}
	return c.dirent(n.StableAttr().Ino, dir, rel)
}

// made finishes a creation in n (directory descriptor dir) of name: it
// fails the change if make failed, else notes the new inode (so
// changes to it in this epoch journal nothing) and returns its node.
func (n *Node) made(ctx context.Context, c *change, dir int, name string, err error, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if err != nil {
		return nil, c.fail(err)
	}
	st, gen, err := backing.Lstatat(dir, name)
	if err != nil {
		return nil, c.fail(err) // made all the same: the records stay
	}
	c.markCreated(n.idOf(st))
	n.attrOut(&out.Attr, st)
	return n.newNode(ctx, st, gen), 0
}

// make journals the creation of name, of type typ, then has mk create it
// in n's directory descriptor, as the caller, with perm: the permission
// bits mode asked for, as the entry is to have them (umask.go; a
// symlink has none).
func (n *Node) make(ctx context.Context, name string, typ, mode uint32, out *fuse.EntryOut, mk func(dir int, perm uint32) error) (*gofs.Inode, syscall.Errno) {
	ch, _, e := n.makeAs(ctx, name, typ, mode, out, mk)
	return ch, e
}

// makeAs is make that also says whether the creator is the turn's agent
// (agent.go; true outside a turn or with no agent scope).
func (n *Node) makeAs(ctx context.Context, name string, typ, mode uint32, out *fuse.EntryOut, mk func(dir int, perm uint32) error) (*gofs.Inode, bool, syscall.Errno) {
	dir, done, e := n.inode()
	if e != 0 {
		return nil, false, e
	}
	defer done()
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	if e := n.newEntry(c, dir, name, typ, "", 0); e != 0 {
		return nil, false, e
	}
	who := c.who()
	err := c.did(asCaller(who, func() error {
		var perm uint32
		if typ != syscall.S_IFLNK {
			perm = n.fs.createMode(who, dir, mode&07777)
		}
		return unmasked(perm, func() error { return mk(dir, perm) })
	}))
	if errors.Is(err, syscall.EEXIST) {
		// The kernel asks only for a name it believes missing: its
		// negative entry is stale (the name was made behind the
		// mount's back). ESTALE makes it look the name up again and
		// retry the call once: open(O_CREAT) then opens the file that
		// exists (a truncation arriving as a SETATTR, journaled as
		// any), mkdir and O_EXCL fail with EEXIST, as natively.
		err = syscall.ESTALE
	}
	ch, e := n.made(ctx, c, dir, name, err, out)
	return ch, !c.notAgent(), e
}

var _ = (gofs.NodeMkdirer)((*Node)(nil))

func (n *Node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, name, syscall.S_IFDIR, mode, out, func(dir int, perm uint32) error {
		return unix.Mkdirat(dir, name, perm)
	})
}

var _ = (gofs.NodeMknoder)((*Node)(nil))

func (n *Node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, name, mode&syscall.S_IFMT, mode, out, func(dir int, perm uint32) error {
		return unix.Mknodat(dir, name, mode&^07777|perm, int(rdev))
	})
}

var _ = (gofs.NodeSymlinker)((*Node)(nil))

func (n *Node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, name, syscall.S_IFLNK, 0, out, func(dir int, _ uint32) error {
		return unix.Symlinkat(target, dir, name)
	})
}

var _ = (gofs.NodeLinker)((*Node)(nil))

// Link links target's own inode (linkat AT_EMPTY_PATH of a descriptor
// of it), which also reaches a file that has no name left but is kept
// aside: an O_TMPFILE file, or an open file whose names were all
// removed (linkat with AT_EMPTY_PATH). Such a link is journaled as a
// creation: what it links from is not in the workspace.
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
	if aside.Private(from) {
		linkTo = ""
	}
	tfd, tdone, e := tn.inode()
	if e != 0 {
		return nil, e
	}
	defer tdone()
	dir, done, e := n.inode()
	if e != 0 {
		return nil, e
	}
	defer done()
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	c.stamp(tn.StableAttr().Ino) // its link count and ctime change
	if e := n.newEntry(c, dir, name, tn.typ(), linkTo, tn.StableAttr().Ino); e != 0 {
		return nil, e
	}
	// As the daemon: linking by descriptor needs CAP_DAC_READ_SEARCH,
	// and a new name changes no owner. The kernel checked the caller's
	// permissions (protected_hardlinks included).
	if err := c.did(unix.Linkat(tfd, "", dir, name, unix.AT_EMPTY_PATH)); err != nil {
		return nil, c.fail(err)
	}
	st, err := backing.Fstat(tfd)
	if err != nil {
		return nil, c.fail(err)
	}
	// The same StableAttr: go-fuse hands the kernel target's inode.
	ch := n.NewInode(ctx, &Node{fs: n.fs}, tn.StableAttr())
	n.attrOut(&out.Attr, st)
	return ch, 0
}

var _ = (gofs.NodeTmpfiler)((*Node)(nil))

// Tmpfile creates a file in no directory (O_TMPFILE). It has no name in
// the workspace, so nothing is journaled, and it is marked created so
// writes to it journal nothing. Since requests reach a node through a
// name (handle.go), it gets one in the aside area, under a name no
// record claims, freed once the kernel forgets the node
// (aside.Area.DropLater). The kernel itself refuses to link a file made
// with O_EXCL.
func (n *Node) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	dir, done, e := n.inode()
	if e != 0 {
		return nil, nil, 0, e
	}
	defer done()
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	fd := -1
	who := c.who()
	perm := n.fs.createMode(who, dir, mode&07777)
	err := asCaller(who, func() error {
		return unmasked(perm, func() error {
			var err error
			fd, err = unix.Openat(dir, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, perm)
			return err
		})
	})
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	defer unix.Close(fd)
	st, gen, err := backing.Lstatat(fd, "")
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	a := n.fs.rec.aside
	name := a.NewName()
	if err := a.LinkFd(fd, name, st); err != nil {
		return nil, nil, 0, errno(err)
	}
	c.markCreated(n.idOf(st))
	ch := n.NewInode(ctx, &Node{fs: n.fs}, n.fs.stable(st, gen))
	var fh gofs.FileHandle
	if cn, ok := ch.Operations().(*Node); ok {
		n.fs.orphans.place(cn, a.Path(name))
		fh = cn.tmpHandle(ctx, !c.notAgent())
	}
	a.DropLater(name)
	n.attrOut(&out.Attr, st)
	if fh == nil {
		return ch, nil, n.openFlags(0), 0
	}
	return ch, fh, n.openFlags(fuse.FOPEN_NOFLUSH), 0
}
