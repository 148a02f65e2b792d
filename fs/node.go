package fs

import (
	"context"
	"path/filepath"
	"strings"
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
	fs *filesystem

	// movedTo is where the node lives (backing-relative) when go-fuse
	// knows no parent for it: its last name was removed while it was
	// open (it is in the aside area), or a rollback moved it under a
	// directory go-fuse does not know. See orphans.go.
	movedTo atomic.Pointer[string]
}

var _ = (gofs.NodeWrapChilder)((*Node)(nil))

// WrapChild makes every node go-fuse creates under a Node a Node too.
func (n *Node) WrapChild(ctx context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &Node{LoopbackNode: ops.(*gofs.LoopbackNode), fs: n.fs}
}

// filesystem is what every node of one mount shares.
type filesystem struct {
	rec       *recorder
	root      int  // O_PATH descriptor of the backing root
	keepCache bool // let the kernel keep pages and listings across opens
	orphans   orphans
	dev       atomic.Uint64 // the mount's device number, once mounted
}

// rel returns the node's path relative to the backing root, and false
// if the node has no name (deleted, not kept aside). It walks go-fuse's
// parents; a parentless ancestor contributes where it was moved to.
func (n *Node) rel() (string, bool) {
	var segs []string
	cur := n.EmbeddedInode()
	for !cur.IsRoot() {
		name, parent := cur.Parent()
		if parent == nil {
			cn, ok := cur.Operations().(*Node)
			if !ok {
				return "", false
			}
			p := cn.movedTo.Load()
			if p == nil {
				return "", false
			}
			segs = append(segs, *p)
			break
		}
		segs = append(segs, name)
		cur = parent
	}
	for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
		segs[i], segs[j] = segs[j], segs[i]
	}
	return strings.Join(segs, "/"), true
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

// openFlags are the FOPEN flags of an open file: the kernel keeps the
// file's pages across opens, since every write reaches it through this
// mount (a rollback invalidates what it rewrites).
func (n *Node) openFlags(fl uint32) uint32 {
	if n.fs.keepCache {
		fl |= fuse.FOPEN_KEEP_CACHE
	}
	return fl
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
	if k := n.fs.rec.aside.Links(a.Ino); k > 0 {
		a.Nlink -= min(k, a.Nlink)
	}
}

var _ = (gofs.NodeLookuper)((*Node)(nil))

func (n *Node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.ENOENT
	}
	old := n.GetChild(name)
	ch, e := n.LoopbackNode.Lookup(ctx, name, out)
	if e != 0 {
		return nil, e
	}
	n.fixNlink(&out.Attr)
	if old != nil && old != ch && old.StableAttr() == ch.StableAttr() {
		// The same inode, known to go-fuse by an object the kernel has
		// forgotten but go-fuse kept, because it still has children
		// (which the kernel may use). A fresh object would leave those
		// children under a parent whose name go-fuse then gives to the
		// fresh one: their paths would go stale. Reviving the old
		// object keeps one object per inode.
		ch = old
	}
	return ch, 0
}

var _ = (gofs.NodeOpendirHandler)((*Node)(nil))

// OpendirHandle lets the kernel cache listings (FOPEN_CACHE_DIR): it
// drops the cache itself when an entry changes through the mount, and a
// rollback invalidates the directories it changes.
func (n *Node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, e := n.LoopbackNode.OpendirHandle(ctx, flags)
	if e != 0 {
		return fh, fl, e
	}
	if n.fs.keepCache {
		fl |= fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	if n.IsRoot() {
		fh = &hidingDir{fh}
	}
	return fh, fl, 0
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
