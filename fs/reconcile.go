package fs

import (
	"path"
	"strings"
	"sync"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"

	"github.com/cowfs/cowfs/aside"
)

// A rollback changes the backing directory behind the mount's back. The
// Mount is its observer (rollback.Observer): it corrects go-fuse's tree
// at once — so paths it computes for later records are right — and
// queues what the kernel must forget (cached entries, negative entries,
// attributes and pages), which Flush sends. The kernel is only told
// after the rollback has released the journal's gate: an invalidation
// can wait on a directory lock held by a FUSE request that waits for
// the gate.

type invalidations struct {
	mu      sync.Mutex
	entries map[*gofs.Inode]map[string]bool
	content map[*gofs.Inode]bool
}

// node returns the inode go-fuse knows at a backing-relative path, or
// nil if the kernel has never looked it up (then it caches nothing of
// it either). The path may lead through a parentless node (orphans.go).
func (m *Mount) node(p string) *gofs.Inode {
	if n := walk(m.root.EmbeddedInode(), p); n != nil {
		return n
	}
	if o, rest := m.root.fs.orphans.under(p); o != nil {
		return walk(o.EmbeddedInode(), rest)
	}
	return nil
}

// walk follows the names of rel down from n.
func walk(n *gofs.Inode, rel string) *gofs.Inode {
	if rel == "" {
		return n
	}
	for _, name := range strings.Split(rel, "/") {
		if n = n.GetChild(name); n == nil {
			return nil
		}
	}
	return n
}

// parent returns the known inode of p's directory and p's last name.
func (m *Mount) parent(p string) (*gofs.Inode, string) {
	dir, name := path.Split(p)
	return m.node(strings.TrimSuffix(dir, "/")), name
}

func (m *Mount) queueEntry(dir *gofs.Inode, name string) {
	if dir == nil {
		return
	}
	m.inval.mu.Lock()
	defer m.inval.mu.Unlock()
	if m.inval.entries == nil {
		m.inval.entries = map[*gofs.Inode]map[string]bool{}
		m.inval.content = map[*gofs.Inode]bool{}
	}
	if m.inval.entries[dir] == nil {
		m.inval.entries[dir] = map[string]bool{}
	}
	m.inval.entries[dir][name] = true
	m.inval.content[dir] = true // its times and link count changed
}

func (m *Mount) queueContent(n *gofs.Inode) {
	if n == nil {
		return
	}
	m.inval.mu.Lock()
	defer m.inval.mu.Unlock()
	if m.inval.content == nil {
		m.inval.entries = map[*gofs.Inode]map[string]bool{}
		m.inval.content = map[*gofs.Inode]bool{}
	}
	m.inval.content[n] = true
}

// Moved records that from (identity ino, linked if it has other names)
// was renamed to to. go-fuse's tree follows: the node moves under its
// new parent if go-fuse knows that directory, or becomes parentless and
// remembers where it went (orphans.go); parentless nodes beneath from
// follow it too.
func (m *Mount) Moved(from, to string, ino uint64, linked bool) {
	fdir, fname := m.parent(from)
	tdir, tname := m.parent(to)
	if aside.Private(from) {
		fdir = nil
	}
	if aside.Private(to) {
		tdir = nil
	}
	known := m.node(from)
	if aside.Private(from) {
		known = nil
	}
	m.changedInode(known, ino, linked) // its times, and link count
	m.dropFd(known)
	m.root.fs.orphans.moved(from, to)
	if known != nil && fdir != nil && tdir != nil {
		fdir.MvChild(fname, tdir, tname, true)
	} else {
		m.put(m.detach(from), to)
	}
	m.queueEntry(fdir, fname)
	m.queueEntry(tdir, tname)
}

// Exchanged records that a and b were exchanged.
func (m *Mount) Exchanged(a, b string) {
	adir, aname := m.parent(a)
	bdir, bname := m.parent(b)
	m.queueContent(m.node(a))
	m.queueContent(m.node(b))
	m.dropFd(m.node(a))
	m.dropFd(m.node(b))
	na, nb := m.detach(a), m.detach(b)
	m.put(na, b)
	m.put(nb, a)
	m.queueEntry(adir, aname)
	m.queueEntry(bdir, bname)
}

// detach takes the node at p out of go-fuse's tree (or out of the
// orphans), if go-fuse knows it.
func (m *Mount) detach(p string) *Node {
	if dir, name := m.parent(p); dir != nil && !aside.Private(p) {
		if ch := dir.GetChild(name); ch != nil {
			n, _ := ch.Operations().(*Node)
			dir.RmChild(name)
			if n != nil {
				return n
			}
		}
	}
	return m.root.fs.orphans.take(p)
}

// put places n at p: under p's directory if go-fuse knows it, else as a
// parentless node that remembers p.
func (m *Mount) put(n *Node, p string) {
	if n == nil {
		return
	}
	if dir, name := m.parent(p); dir != nil && !aside.Private(p) {
		dir.AddChild(name, n.EmbeddedInode(), true)
		return
	}
	m.root.fs.orphans.place(n, p)
}

// Replaced records that the object at p was replaced, created or
// deleted behind the mount's back (package rescan): go-fuse forgets its
// node there, and the kernel its entry and what it cached of the old
// object. Requests on a node the kernel still holds fail with ESTALE
// (handle.go), never reach the new object by mistake.
func (m *Mount) Replaced(p string) {
	dir, name := m.parent(p)
	if aside.Private(p) {
		return
	}
	m.queueContent(m.node(p))
	m.detach(p)
	m.queueEntry(dir, name)
}

// TakeStamps returns when the mount last changed each inode it changed
// since the last call (Unix nanoseconds, after the change), for package
// rescan: a later ctime means a change outside the mount. The caller
// holds the journal's gate exclusively.
func (m *Mount) TakeStamps() map[uint64]int64 {
	return m.root.fs.pass.stampLive(m.root.fs.rec.takeStamps())
}

// Changed records that p (identity ino, linked if it has other names)
// changed in place.
func (m *Mount) Changed(p string, ino uint64, linked bool) {
	m.changed(p, ino, linked)
}

// Rewritten records that p's bytes or size changed in place: the pages
// the kernel holds of it are stale, and none it holds now may be written
// back over the restored file (rewritten.go).
func (m *Mount) Rewritten(p string, ino uint64, linked bool) {
	if n := m.changed(p, ino, linked); n != nil {
		m.root.fs.rewrites.mark(n, p)
	}
}

// changed queues what the kernel must forget of p, changed in place,
// and returns the node go-fuse knows it by, if any. The node's next
// answer with attributes then carries the change as the daemon's own
// (coherence.go): Flush drops its pages, and the first stat after it
// must not drop the pages read since again.
func (m *Mount) changed(p string, ino uint64, linked bool) *gofs.Inode {
	n := m.node(p)
	n = m.changedInode(n, ino, linked)
	m.dropFd(n)
	if n != nil {
		if nn, ok := n.Operations().(*Node); ok {
			nn.changing()
		}
	}
	return n
}

// dropFd closes the descriptor node n keeps (handle.go), if no request
// is using it: a rollback moved or rewrote what n is. This is tidiness,
// not correctness — a descriptor names the inode, wherever the rollback
// put it — so a descriptor in use stays: closing it would wait for the
// request using it, which may be waiting for the gate the rollback
// holds.
func (m *Mount) dropFd(n *gofs.Inode) {
	m.root.fs.ioGen.Add(1) // for content descriptors this is correctness (iofd.go)
	if n == nil {
		return
	}
	if nn, ok := n.Operations().(*Node); ok {
		m.root.fs.fds.tryForget(nn)
	}
}

// changedInode queues the invalidation of inode ino, known to go-fuse
// as n if n is not nil. An inode with other names go-fuse may know only
// by one of those: then the tree is searched, which is rare enough
// (hard links, in a rollback) to cost what it costs.
func (m *Mount) changedInode(n *gofs.Inode, ino uint64, linked bool) *gofs.Inode {
	if n == nil && linked {
		n = findIno(m.root.EmbeddedInode(), ino, map[*gofs.Inode]bool{})
	}
	m.queueContent(n)
	return n
}

// findIno searches the known tree beneath dir for inode ino.
func findIno(dir *gofs.Inode, ino uint64, seen map[*gofs.Inode]bool) *gofs.Inode {
	seen[dir] = true
	for _, ch := range dir.Children() {
		if ch.StableAttr().Ino == ino {
			return ch
		}
		if ch.IsDir() && !seen[ch] {
			if n := findIno(ch, ino, seen); n != nil {
				return n
			}
		}
	}
	return nil
}

// Flush tells the kernel to forget what the changes recorded since the
// last Flush made stale. The caller must not hold the journal's gate:
// dropping a file's pages writes the dirty ones back first, and those
// WRITEs take it. When Flush returns, the kernel holds no page it cached
// before a rollback rewrote the file (rewritten.go).
func (m *Mount) Flush() {
	m.inval.mu.Lock()
	entries, content := m.inval.entries, m.inval.content
	m.inval.entries, m.inval.content = nil, nil
	m.inval.mu.Unlock()
	for dir, names := range entries {
		for name := range names {
			dir.NotifyEntry(name)
		}
	}
	for n := range content {
		mark := m.root.fs.rewrites.markOf(n)
		n.NotifyContent(0, 0)
		m.root.fs.rewrites.dropped(n, mark)
	}
}
