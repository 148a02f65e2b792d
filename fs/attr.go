package fs

import (
	"context"
	"syscall"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
)

// Reading a node's attributes, link target and xattrs: each through a
// descriptor of the node's own inode (handle.go), which also reaches a
// file whose names were all removed while it was open (it lives on in
// the aside area).

var _ = (gofs.NodeGetattrer)((*Node)(nil))

func (n *Node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.saw(ctx)
	st, e := n.stat()
	if e != 0 {
		return e
	}
	n.attrOut(&out.Attr, st)
	n.answered(st.Mtim.Nano(), st.Size)
	return 0
}

var _ = (gofs.NodeStatxer)((*Node)(nil))

func (n *Node) Statx(ctx context.Context, f gofs.FileHandle, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	n.saw(ctx)
	fd, done, e := n.inode()
	if e != 0 {
		return e
	}
	defer done()
	var st unix.Statx_t
	if err := unix.Statx(fd, "", int(flags)|unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, int(mask), &st); err != nil {
		return errno(err)
	}
	out.FromStatx(&st)
	if st.Mask&(unix.STATX_MTIME|unix.STATX_SIZE) == unix.STATX_MTIME|unix.STATX_SIZE {
		n.answered(st.Mtime.Sec*1e9+int64(st.Mtime.Nsec), int64(st.Size))
	}
	out.Ino = n.StableAttr().Ino
	if k := n.fs.rec.aside.Links(st.Ino); k > 0 {
		out.Nlink -= min(k, out.Nlink)
	}
	return 0
}

var _ = (gofs.NodeReadlinker)((*Node)(nil))

func (n *Node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	fd, done, e := n.inode()
	if e != 0 {
		return nil, e
	}
	defer done()
	target, err := backing.Readlink(fd)
	return []byte(target), errno(err)
}

var _ = (gofs.NodeGetxattrer)((*Node)(nil))

func (n *Node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	fd, done, e := n.inode()
	if e != 0 {
		return 0, e
	}
	defer done()
	sz, err := backing.GetxattrInto(fd, attr, dest)
	return uint32(max(sz, 0)), errno(err)
}

var _ = (gofs.NodeListxattrer)((*Node)(nil))

func (n *Node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	fd, done, e := n.inode()
	if e != 0 {
		return 0, e
	}
	defer done()
	sz, err := backing.Listxattr(fd, dest)
	return uint32(max(sz, 0)), errno(err)
}
