package fs

import (
	"path"
	"strings"
	"sync"

	gofs "github.com/hanwen/go-fuse/v2/fs"

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
// it either).
func (m *Mount) node(p string) *gofs.Inode {
	n := m.root.EmbeddedInode()
	if p == "" {
		return n
	}
	for _, name := range strings.Split(p, "/") {
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

func inAside(p string) bool { return p == aside.Dir || strings.HasPrefix(p, aside.Dir+"/") }

// Moved records that from was renamed to to.
func (m *Mount) Moved(from, to string) {
	fdir, fname := m.parent(from)
	tdir, tname := m.parent(to)
	if inAside(to) {
		// Out of the view; a node still open keeps a name for records.
		if ch := m.node(from); ch != nil {
			if n, ok := ch.Operations().(*Node); ok {
				n.asidePath.Store(&to)
			}
		}
	}
	switch {
	case fdir != nil && tdir != nil && !inAside(from) && !inAside(to):
		fdir.MvChild(fname, tdir, tname, true)
	case fdir != nil && !inAside(from):
		fdir.RmChild(fname)
	}
	if !inAside(from) {
		m.queueEntry(fdir, fname)
	}
	if !inAside(to) {
		m.queueEntry(tdir, tname)
	}
}

// Exchanged records that a and b were exchanged.
func (m *Mount) Exchanged(a, b string) {
	adir, aname := m.parent(a)
	bdir, bname := m.parent(b)
	if adir != nil && bdir != nil {
		adir.ExchangeChild(aname, bdir, bname)
	}
	m.queueEntry(adir, aname)
	m.queueEntry(bdir, bname)
}

// Changed records that p's content or attributes changed in place.
func (m *Mount) Changed(p string) { m.queueContent(m.node(p)) }

// Flush tells the kernel to forget what the changes recorded since the
// last Flush made stale. The caller must not hold the journal's gate.
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
		n.NotifyContent(0, 0)
	}
}
