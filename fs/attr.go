package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// A node reads its own attributes, link target, xattrs and content
// through its own path (Node.rel), not go-fuse's: a file whose names
// were all removed while it was open lives on in the aside area, and
// rel knows where; go-fuse would give a path that no longer exists.

// own returns a path to the node's backing inode that the l* calls do
// not follow: the root's is its directory ("…/fd/N/."), not the /proc
// link itself.
func (n *Node) own() (string, syscall.Errno) {
	rel, ok := n.rel()
	if !ok {
		return "", syscall.ENOENT
	}
	if rel == "" {
		return n.RootData.Path + "/.", 0
	}
	return n.abs(rel), 0
}

var _ = (gofs.NodeGetattrer)((*Node)(nil))

func (n *Node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	p, e := n.own()
	if e != 0 {
		return e
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return errno(err)
	}
	out.FromStat(&st)
	n.fixNlink(&out.Attr)
	return 0
}

var _ = (gofs.NodeStatxer)((*Node)(nil))

func (n *Node) Statx(ctx context.Context, f gofs.FileHandle, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	p, e := n.own()
	if e != 0 {
		return e
	}
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, int(flags)|unix.AT_SYMLINK_NOFOLLOW, int(mask), &st); err != nil {
		return errno(err)
	}
	out.FromStatx(&st)
	if k := n.fs.rec.aside.Links(out.Ino); k > 0 {
		out.Nlink -= min(k, out.Nlink)
	}
	return 0
}

var _ = (gofs.NodeReadlinker)((*Node)(nil))

func (n *Node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	p, e := n.own()
	if e != 0 {
		return nil, e
	}
	buf := make([]byte, unix.PathMax)
	sz, err := unix.Readlink(p, buf)
	if err != nil {
		return nil, errno(err)
	}
	return buf[:sz], 0
}

var _ = (gofs.NodeGetxattrer)((*Node)(nil))

func (n *Node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	p, e := n.own()
	if e != 0 {
		return 0, e
	}
	sz, err := unix.Lgetxattr(p, attr, dest)
	return uint32(max(sz, 0)), errno(err)
}

var _ = (gofs.NodeListxattrer)((*Node)(nil))

func (n *Node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	p, e := n.own()
	if e != 0 {
		return 0, e
	}
	sz, err := unix.Llistxattr(p, dest)
	return uint32(max(sz, 0)), errno(err)
}

// openOwn opens the node's backing file beneath the root, following no
// symlink on the way (go-fuse's loopback does the same through its own
// path).
func (n *Node) openOwn(flags uint32) (gofs.FileHandle, syscall.Errno) {
	rel, ok := n.rel()
	if !ok {
		return nil, syscall.ENOENT
	}
	if rel == "" {
		rel = "."
	}
	// The kernel computes append offsets; FMODE_EXEC is not an open flag.
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	how := unix.OpenHow{Flags: uint64(flags) | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(n.fs.root, rel, &how)
	if err != nil {
		return nil, errno(err)
	}
	return gofs.NewLoopbackFile(fd), 0
}
