package fs

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
)

// Node is a file or directory of the mounted workspace. It is go-fuse's
// LoopbackNode with every method that changes the backing directory
// overridden to journal first; the others are inherited.
type Node struct {
	*gofs.LoopbackNode
	rec *recorder

	// asidePath is the backing-relative path of this inode in the aside
	// area once its last known name was removed while it was open.
	asidePath atomic.Pointer[string]
}

var _ = (gofs.NodeWrapChilder)((*Node)(nil))

// WrapChild makes every node go-fuse creates under a Node a Node too.
func (n *Node) WrapChild(ctx context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &Node{LoopbackNode: ops.(*gofs.LoopbackNode), rec: n.rec}
}

// rel returns the node's path relative to the backing root, and false
// if the node has no name (deleted, not kept aside).
func (n *Node) rel() (string, bool) {
	if n.IsRoot() {
		return "", true
	}
	if _, parent := n.Parent(); parent == nil {
		if p := n.asidePath.Load(); p != nil {
			return *p, true
		}
		return "", false
	}
	return n.Path(n.Root()), true
}

// abs returns the backing path for a backing-relative path.
func (n *Node) abs(rel string) string {
	if rel == "" {
		return n.RootData.Path
	}
	return n.RootData.Path + "/" + rel
}

// child returns the backing-relative and absolute paths of name in n.
func (n *Node) child(name string) (rel, abs string, ok bool) {
	dir, ok := n.rel()
	if !ok {
		return "", "", false
	}
	rel = filepath.Join(dir, name)
	return rel, n.abs(rel), true
}

// idOf returns the identity records give the inode with stat st.
func (n *Node) idOf(st *syscall.Stat_t) uint64 {
	return journal.InodeID(uint64(st.Dev), st.Ino, n.RootData.Dev)
}

// dirChange journals directory n's attributes before its first entry
// change in this epoch.
func (n *Node) dirChange(c *change) error {
	dir, ok := n.rel()
	if !ok {
		return syscall.ENOENT
	}
	return c.dirent(n.StableAttr().Ino, n.abs(dir), dir)
}

// hidden reports whether name in n is cowfs's private directory, which
// the workspace's view does not show and cannot touch.
func (n *Node) hidden(name string) bool {
	return name == aside.Dir && n.IsRoot()
}

// childNode returns the Node go-fuse knows at name in n, if any.
func (n *Node) childNode(name string) *Node {
	if ch := n.GetChild(name); ch != nil {
		if cn, ok := ch.Operations().(*Node); ok {
			return cn
		}
	}
	return nil
}

// fixNlink subtracts the names the aside area holds from a link count,
// so the workspace sees the count it would see without cowfs: an open
// file that was deleted has no links.
func (n *Node) fixNlink(a *fuse.Attr) {
	if k := n.rec.aside.Links(a.Ino); k > 0 {
		a.Nlink -= min(k, a.Nlink)
	}
}

var _ = (gofs.NodeLookuper)((*Node)(nil))

func (n *Node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.ENOENT
	}
	ch, e := n.LoopbackNode.Lookup(ctx, name, out)
	if e == 0 {
		n.fixNlink(&out.Attr)
	}
	return ch, e
}

var _ = (gofs.NodeGetattrer)((*Node)(nil))

func (n *Node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	e := n.LoopbackNode.Getattr(ctx, f, out)
	if e == 0 {
		n.fixNlink(&out.Attr)
	}
	return e
}

var _ = (gofs.NodeStatxer)((*Node)(nil))

func (n *Node) Statx(ctx context.Context, f gofs.FileHandle, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	e := n.LoopbackNode.Statx(ctx, f, flags, mask, out)
	if e == 0 {
		if k := n.rec.aside.Links(out.Ino); k > 0 {
			out.Nlink -= min(k, out.Nlink)
		}
	}
	return e
}

var _ = (gofs.NodeOpendirHandler)((*Node)(nil))

func (n *Node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, e := n.LoopbackNode.OpendirHandle(ctx, flags)
	if e != 0 || !n.IsRoot() {
		return fh, fl, e
	}
	return &hidingDir{fh}, fl, 0
}

// hidingDir is the root directory's listing without cowfs's private
// directory.
type hidingDir struct{ gofs.FileHandle }

var (
	_ gofs.FileReaddirenter = (*hidingDir)(nil)
	_ gofs.FileSeekdirer    = (*hidingDir)(nil)
	_ gofs.FileReleasedirer = (*hidingDir)(nil)
	_ gofs.FileFsyncdirer   = (*hidingDir)(nil)
)

func (d *hidingDir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	r := d.FileHandle.(gofs.FileReaddirenter)
	for {
		de, e := r.Readdirent(ctx)
		if e != 0 || de == nil || de.Name != aside.Dir {
			return de, e
		}
	}
}

func (d *hidingDir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.FileHandle.(gofs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *hidingDir) Releasedir(ctx context.Context, flags uint32) {
	d.FileHandle.(gofs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *hidingDir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.FileHandle.(gofs.FileFsyncdirer).Fsyncdir(ctx, flags)
}
