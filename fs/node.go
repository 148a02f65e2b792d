package fs

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// Node is a file or directory of the mounted workspace. It reaches its
// backing inode only through descriptors (handle.go), never through a
// path string, and every method that changes the backing directory
// journals first.
type Node struct {
	gofs.Inode
	fs *filesystem

	// movedTo is where the node lives (backing-relative) when go-fuse
	// knows no parent for it: its last name was removed while it was
	// open (it is in the aside area), or a rollback moved it under a
	// directory go-fuse does not know. See orphans.go.
	movedTo atomic.Pointer[string]

	// fd caches a descriptor of the node's inode (handle.go).
	fd nodeFd

	// caller is the thread behind the latest request on the node that
	// named one: the first guess at who flushes a shared mapping of it
	// (mapper.go).
	caller atomic.Uint32
	// used is set by a request on the node and cleared by the trimmer
	// (trim.go).
	used atomic.Bool
	// stamp is the content the kernel was last told of (coherence.go).
	stamp contentStamp
}

// filesystem is what every node of one mount shares.
type filesystem struct {
	rec     *recorder
	root    int // O_PATH descriptor of the backing root
	tree    *backing.Tree
	rootDev uint64
	// cacheTimeout is how long the kernel may keep entries and
	// attributes the daemon answers with (Config.CacheTimeout; 0: not
	// at all).
	cacheTimeout time.Duration
	orphans      orphans
	fds          fdCache
	ioGen        atomic.Uint64 // advanced by rollbacks: content descriptors kept before are not used (iofd.go)
	dev          atomic.Uint64 // the mount's device number, once mounted
	bg           sync.WaitGroup
	queue        laterQueue // work for the next batch (later.go)
	umasks       umasks     // of creating requests in flight (umask.go)
	rewrites     rewrites   // nodes a rollback rewrote, until their pages are dropped (rewritten.go)
	writebacks   writebacks // WRITEs in flight that write cached pages back (rewritten.go)
	trim         *trimmer
	pass         passthrough // files the kernel writes itself (passthrough.go)
}

// keepCache says whether the kernel keeps pages and listings across
// opens.
func (fs *filesystem) keepCache() bool { return fs.cacheTimeout > 0 }

// explicitData says whether the kernel keeps pages across attribute
// changes and the daemon invalidates them (coherence.go).
func (fs *filesystem) explicitData() bool { return fs.cacheTimeout >= explicitDataFrom }

// apart runs fn in a goroutine of its own, joined before the mount's
// descriptors close: for work a FUSE callback must not wait for.
func (fs *filesystem) apart(fn func()) {
	fs.bg.Add(1)
	go func() {
		defer fs.bg.Done()
		fn()
	}()
}

// newNode returns a node for a backing inode with stat st and
// generation gen (backing.Lstatat).
func (n *Node) newNode(ctx context.Context, st *unix.Stat_t, gen uint64) *gofs.Inode {
	ch := &Node{fs: n.fs}
	n.fs.trim.add(ch)
	return n.NewInode(ctx, ch, n.fs.stable(st, gen))
}

// stable is the identity go-fuse gives the kernel for an inode: the
// backing inode number, with the device mixed in if it is not the
// root's (journal.InodeID does the same), and its birth time as the
// generation, so a number reused after a deletion is a new inode.
func (fs *filesystem) stable(st *unix.Stat_t, gen uint64) gofs.StableAttr {
	return gofs.StableAttr{Mode: st.Mode, Ino: fs.idOf(st), Gen: gen}
}

// rootStable is the stable identity of the backing root (descriptor
// root), or nil (go-fuse's default) if it cannot be read.
func rootStable(fs *filesystem, root int) *gofs.StableAttr {
	st, gen, err := backing.Lstatat(root, "")
	if err != nil {
		return nil
	}
	s := fs.stable(st, gen)
	return &s
}

// rel returns the node's path relative to the backing root, and false
// if the node has no name (deleted, not kept aside). It walks go-fuse's
// parents; a parentless ancestor contributes where it was moved to.
// Paths are for the journal and the kernel's caches only: the backing
// directory is reached through descriptors (handle.go).
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

// child returns the backing-relative path of name in n.
func (n *Node) child(name string) (string, bool) {
	dir, ok := n.rel()
	if !ok {
		return "", false
	}
	if dir == "" {
		return name, true
	}
	return dir + "/" + name, true
}

// idOf returns the identity records give the inode with stat st.
func (n *Node) idOf(st *unix.Stat_t) uint64 { return n.fs.idOf(st) }

// idOf returns the identity of the inode with stat st.
func (fs *filesystem) idOf(st *unix.Stat_t) uint64 {
	return journal.InodeID(st.Dev, st.Ino, fs.rootDev)
}

// typ is the node's file type (S_IFMT bits).
func (n *Node) typ() uint32 { return n.StableAttr().Mode & syscall.S_IFMT }

// openFlags are the FOPEN flags of an open file: the kernel keeps the
// file's pages across opens, since every write reaches it through this
// mount (a rollback invalidates what it rewrites).
func (n *Node) openFlags(fl uint32) uint32 {
	if n.fs.keepCache() {
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

// attrOut fills out from st, with the link count the workspace would
// see without the aside area: an open file that was deleted has none.
func (n *Node) attrOut(out *fuse.Attr, st *unix.Stat_t) {
	*out = fuse.Attr{
		Ino: n.fs.idOf(st), Size: uint64(st.Size), Blocks: uint64(st.Blocks),
		Atime: uint64(st.Atim.Sec), Atimensec: uint32(st.Atim.Nsec),
		Mtime: uint64(st.Mtim.Sec), Mtimensec: uint32(st.Mtim.Nsec),
		Ctime: uint64(st.Ctim.Sec), Ctimensec: uint32(st.Ctim.Nsec),
		Mode: st.Mode, Nlink: uint32(st.Nlink),
		Owner: fuse.Owner{Uid: st.Uid, Gid: st.Gid},
		Rdev:  uint32(st.Rdev), Blksize: uint32(st.Blksize),
	}
	if k := n.fs.rec.aside.Links(st.Ino); k > 0 {
		out.Nlink -= min(k, out.Nlink)
	}
}

var _ = (gofs.NodeLookuper)((*Node)(nil))

func (n *Node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.ENOENT
	}
	dir, done, e := n.inode()
	if e != 0 {
		return nil, e
	}
	st, gen, err := backing.Lstatat(dir, name)
	done()
	if err != nil {
		return nil, errno(err)
	}
	n.attrOut(&out.Attr, st)
	old := n.GetChild(name)
	ch := n.newNode(ctx, st, gen)
	if old != nil && old != ch && old.StableAttr() == ch.StableAttr() {
		// The same inode, known to go-fuse by an object the kernel has
		// forgotten but go-fuse kept, because it still has children
		// (which the kernel may use). A fresh object would leave those
		// children under a parent whose name go-fuse then gives to the
		// fresh one: their paths would go stale. Reviving the old
		// object keeps one object per inode.
		ch = old
	}
	if cn, ok := ch.Operations().(*Node); ok {
		cn.saw(ctx)
		cn.answered(st.Mtim.Nano(), st.Size)
	}
	return ch, 0
}

var _ = (gofs.NodeStatfser)((*Node)(nil))

func (n *Node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(n.fs.root, &st); err != nil {
		return errno(err)
	}
	out.FromStatfsT(&st)
	return 0
}
