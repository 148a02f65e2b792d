package fs

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
)

// How a node reaches its backing inode. Never through a path string:
// the workspace's contents may swap any directory for a symlink at any
// moment, and a string is resolved anew by every call. A node's inode
// is opened from a descriptor of the directory holding it and its one
// name there (O_NOFOLLOW), and checked to be the node's own inode
// before anything is done with it; that directory's descriptor comes
// the same way from its own parent, up to the root descriptor taken
// before the mount. So a request acts on the inode the kernel named,
// or fails (ENOENT, ESTALE, ELOOP) — never on something outside the
// workspace, and at any depth: no path is ever longer than one name.
//
// Nodes keep their descriptor (O_PATH) while the kernel knows them,
// within a bounded budget (fdCache): most requests on a directory then
// cost one *at call on its descriptor, and reading or setting a file's
// attributes or xattrs costs no open at all. A descriptor names an
// inode, not a path, so it stays right when the node is renamed,
// through the mount or by a rollback (which drops those it moves all
// the same: reconcile.go). An O_PATH descriptor is no writer: it never
// makes an exec of the file fail with ETXTBSY. Content is read and
// written through a second descriptor a regular file's node keeps in
// the same slot (iofd.go).
//
// A node with no parent in go-fuse's tree (orphans.go) is reached
// through the backing.Tree, beneath the root, from where it was moved
// to.

// inode returns an O_PATH descriptor of n's backing inode, checked to be
// n's, and a function to call when done with it.
func (n *Node) inode() (int, func(), syscall.Errno) {
	if n.IsRoot() {
		return n.fs.root, noop, 0
	}
	for {
		if fd, ok := n.fd.get(); ok {
			return fd, n.fd.mu.RUnlock, 0
		}
		fd, e := n.derive()
		if e != 0 {
			return -1, nil, e
		}
		if !n.fs.fds.install(n, fd) {
			return fd, func() { unix.Close(fd) }, 0
		}
		// Installed; take it the usual way (an eviction in between
		// sends us round again).
	}
}

func noop() {}

// entry returns a descriptor of the directory holding n, n's name in
// it, and a function to call when done with the descriptor.
func (n *Node) entry() (dir int, name string, done func(), e syscall.Errno) {
	name, parent := n.Parent()
	if parent == nil {
		p := n.movedTo.Load()
		if n.IsRoot() || p == nil {
			return -1, "", nil, syscall.ENOENT
		}
		fd, last, err := n.fs.tree.Parent(*p)
		if err != nil {
			return -1, "", nil, errno(err)
		}
		return fd, last, func() { unix.Close(fd) }, 0
	}
	pn, ok := parent.Operations().(*Node)
	if !ok {
		return -1, "", nil, syscall.EIO
	}
	fd, done, e := pn.inode()
	return fd, name, done, e
}

// derive opens n's backing inode afresh (O_PATH).
func (n *Node) derive() (int, syscall.Errno) {
	return n.open(unix.O_PATH)
}

// open opens n's backing inode with flags, from the directory holding
// it, never following a symlink, and checks that what it opened is n's
// inode. A rename through the mount can move n between reading its
// parent and opening it; then it tries again.
func (n *Node) open(flags int) (int, syscall.Errno) {
	if n.IsRoot() {
		fd, err := unix.Openat(n.fs.root, ".", flags|unix.O_CLOEXEC, 0)
		return fd, errno(err)
	}
	// O_NONBLOCK: something swapped in behind the mount's back (a FIFO)
	// must not make the open wait; the check below then refuses it.
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_NONBLOCK
	}
	for try := 0; ; try++ {
		name, parent := n.Parent()
		dir, name2, done, e := n.entry()
		if e != 0 {
			return -1, e
		}
		fd, err := unix.Openat(dir, name2, flags, 0)
		done()
		if err == nil {
			if err = n.check(fd); err == nil {
				return fd, 0
			}
			unix.Close(fd)
		}
		if name3, parent3 := n.Parent(); try < 3 && (name3 != name || parent3 != parent) {
			continue
		}
		return -1, errno(err)
	}
}

// check checks that fd holds n's inode: its identity and type.
func (n *Node) check(fd int) error {
	st, err := backing.Fstat(fd)
	if err != nil {
		return err
	}
	if n.idOf(st) != n.StableAttr().Ino || st.Mode&syscall.S_IFMT != n.typ() {
		// Not the inode the kernel named: something replaced it behind
		// the mount's back.
		return syscall.ESTALE
	}
	return nil
}

// stat returns n's attributes, read through a descriptor of n.
func (n *Node) stat() (*unix.Stat_t, syscall.Errno) {
	fd, done, e := n.inode()
	if e != 0 {
		return nil, e
	}
	defer done()
	st, err := backing.Fstat(fd)
	return st, errno(err)
}

// nodeFd is a node's cached O_PATH descriptor. It is read under mu held
// shared, for as long as the descriptor is in use; closing it
// (eviction, forget) takes mu exclusively.
type nodeFd struct {
	mu   sync.RWMutex
	held bool
	fd   int
	slot int         // index in fdCache.ring
	used atomic.Bool // used since the clock hand last passed
	io   ioFd        // kept for reading or writing content (iofd.go)
}

// get returns the descriptor with mu held shared, if there is one.
func (d *nodeFd) get() (int, bool) {
	d.mu.RLock()
	if !d.held {
		d.mu.RUnlock()
		return -1, false
	}
	d.used.Store(true)
	return d.fd, true
}

// drop closes the descriptor. The caller holds mu exclusively and the
// cache's lock.
func (d *nodeFd) drop() {
	if d.held {
		unix.Close(d.fd)
		d.held = false
	}
	d.io.close()
}

// fdCache bounds the descriptors nodes keep: the process has a limited
// number of descriptors, and the kernel may know far more nodes than
// that. When full, a clock hand evicts one not used since it last
// passed.
type fdCache struct {
	mu      sync.Mutex
	limit   int
	ring    []*Node
	hand    int
	writers writers // nodes keeping a writable descriptor (iofd.go)
}

// install gives n the descriptor fd to keep, and reports whether it
// did; if not, fd is the caller's to close. It never waits for n's
// lock while holding the cache's: a request using n's descriptor may
// need the cache's lock to install another node's (a rename), so if
// one is using it, fd is simply not kept.
func (c *fdCache) install(n *Node, fd int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !n.fd.mu.TryLock() {
		return false
	}
	defer n.fd.mu.Unlock()
	if n.fd.held {
		unix.Close(fd) // another request was first
		return true
	}
	if len(c.ring) < c.limit {
		n.fd.slot = len(c.ring)
		c.ring = append(c.ring, n)
	} else if !c.evict(n) {
		return false
	}
	n.fd.held, n.fd.fd = true, fd
	return true
}

// evict frees a slot of the ring for n. The caller holds c.mu.
func (c *fdCache) evict(n *Node) bool {
	for i := 0; i < 2*len(c.ring); i++ {
		c.hand = (c.hand + 1) % len(c.ring)
		v := c.ring[c.hand]
		if v.fd.used.Swap(false) || !v.fd.mu.TryLock() {
			continue
		}
		v.fd.drop()
		v.fd.mu.Unlock()
		n.fd.slot = c.hand
		c.ring[c.hand] = n
		return true
	}
	return false
}

// forget closes n's descriptor, if it has one: the kernel no longer
// knows n. It waits while requests use the descriptor, by polling: a
// request holding it may need the cache's lock (install of another
// node), and may take it shared once more (a rename within one
// directory), which a waiting Lock would block.
func (c *fdCache) forget(n *Node) {
	for !c.tryForget(n) {
		time.Sleep(time.Millisecond)
	}
}

// tryForget is forget if it can take the locks without waiting, and
// reports whether it could. (OnForget runs inside go-fuse, where
// waiting for a request that holds n's descriptor could deadlock.)
func (c *fdCache) tryForget(n *Node) bool {
	if !c.mu.TryLock() {
		return false
	}
	defer c.mu.Unlock()
	if !n.fd.mu.TryLock() {
		return false
	}
	defer n.fd.mu.Unlock()
	c.forgetLocked(n)
	return true
}

// forgetLocked is forget, with c.mu and n.fd.mu held.
func (c *fdCache) forgetLocked(n *Node) {
	if !n.fd.held {
		return
	}
	n.fd.drop()
	last := len(c.ring) - 1
	moved := c.ring[last]
	c.ring[n.fd.slot] = moved
	moved.fd.slot = n.fd.slot
	c.ring = c.ring[:last]
}

// close closes every descriptor kept, once the mount is over.
func (c *fdCache) close() {
	c.writers.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.ring {
		n.fd.mu.Lock()
		n.fd.drop()
		n.fd.mu.Unlock()
	}
	c.ring = nil
}

// fdLimit is how many nodes keep descriptors: a quarter of what the
// process may open. Each keeps up to two (its O_PATH one and one for
// content, iofd.go), so half is left for requests, the journal and the
// control socket.
func fdLimit() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 256
	}
	return int(min(max(rl.Cur/4, 64), 1<<16))
}
