package fs

import (
	"context"
	"errors"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
)

var _ = (gofs.NodeSetattrer)((*Node)(nil))

// Setattr journals the attributes before the first change in the epoch
// and, for a truncation, the bytes it cuts off. This is also how
// `echo x > existing` arrives: OPEN without O_TRUNC, then SETATTR
// size=0.
func (n *Node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	// Through a descriptor, not go-fuse's path of n, which is stale
	// once n's names are gone (see ioFile). Symlinks and special files
	// cannot be opened, nor stay in use once removed.
	var f *file
	if n.opensOwn() {
		var done func()
		var e syscall.Errno
		if f, done, e = n.ioFile(n.setattrFlags(in)); e != 0 {
			return e
		}
		defer done()
		fh = f
	}
	c := n.fs.rec.begin(ctx, n.writer())
	defer c.end()

	cause := journal.CauseTimes
	lo := int64(1 << 62)
	if _, ok := in.GetMode(); ok {
		cause = journal.CauseMode
	}
	_, uok := in.GetUID()
	_, gok := in.GetGID()
	if uok || gok {
		cause = journal.CauseOwner
	}
	if sz, ok := in.GetSize(); ok {
		cause, lo = journal.CauseTruncate, int64(sz)
	}
	if err := n.beforeContent(c, f, lo, 1<<62, cause); err != nil {
		return errno(err)
	}
	if e := n.LoopbackNode.Setattr(ctx, fh, in, out); e != 0 {
		return e
	}
	if _, setsMode := in.GetMode(); in.Valid&fuse.FATTR_KILL_SUIDGID != 0 && !setsMode {
		if mode, kill := withoutSetID(out.Mode); kill && c.caller.raw.Uid != 0 {
			if err := n.chmodSetID(f, mode); err != nil {
				return errno(err)
			}
			out.Mode = out.Mode&syscall.S_IFMT | mode
		}
	}
	n.fixNlink(&out.Attr)
	return 0
}

// chmodSetID sets n's mode through f if open, else through its path.
func (n *Node) chmodSetID(f *file, mode uint32) error {
	if f != nil {
		return unix.Fchmod(f.fd, mode)
	}
	rel, ok := n.rel()
	if !ok {
		return nil
	}
	return unix.Chmod(n.abs(rel), mode)
}

var _ = (gofs.NodeSetxattrer)((*Node)(nil))

func (n *Node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	if err := n.beforeXattr(c, attr); err != nil {
		return errno(err)
	}
	return n.LoopbackNode.Setxattr(ctx, attr, data, flags)
}

var _ = (gofs.NodeRemovexattrer)((*Node)(nil))

func (n *Node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	c := n.fs.rec.begin(ctx, nil)
	defer c.end()
	if err := n.beforeXattr(c, attr); err != nil {
		return errno(err)
	}
	return n.LoopbackNode.Removexattr(ctx, attr)
}

// beforeXattr journals the old value of xattr name (or that it did not
// exist) before its first change in the epoch, and the attributes too:
// an ACL xattr changes the mode.
func (n *Node) beforeXattr(c *change, name string) error {
	if err := n.beforeContent(c, nil, 0, 0, journal.CauseXattr); err != nil {
		return err
	}
	id := n.StableAttr().Ino
	s := c.state(id)
	defer s.mu.Unlock()
	if s.created || s.xattrs[name] {
		return nil
	}
	rel, ok := n.rel()
	if !ok {
		return nil
	}
	rec := &journal.Record{Kind: journal.KindXattr, Path: rel, Type: n.StableAttr().Mode & syscall.S_IFMT, Ino: id, XattrName: name}
	val, err := lgetxattr(n.abs(rel), name)
	switch {
	case err == nil:
		rec.XattrValue, rec.XattrExisted = val, true
	case !errors.Is(err, unix.ENODATA):
		return err
	}
	if err := c.record(rec, nil); err != nil {
		return err
	}
	if s.xattrs == nil {
		s.xattrs = map[string]bool{}
	}
	s.xattrs[name] = true
	return nil
}

// lgetxattr returns the value of xattr name of path, not following a
// final symlink.
func lgetxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		sz, err := unix.Lgetxattr(path, name, buf)
		if errors.Is(err, unix.ERANGE) {
			sz, err = unix.Lgetxattr(path, name, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, sz)
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:sz], nil
	}
}
