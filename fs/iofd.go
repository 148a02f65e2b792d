package fs

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Content descriptors. A READ, WRITE, FSYNC or truncation needs a
// descriptor of the node's backing file open for reading or writing;
// opening one per request (an openat, the fstat that checks it is the
// node's inode, a close, and for a writer ext4's release work) was a
// fifth of the daemon's work on small random writes. So a regular
// file's node keeps one beside its O_PATH descriptor (handle.go), in
// the same slot of the fdCache, which bounds both: evicting or
// forgetting the node closes both.
//
// A kept descriptor is used by many requests at once; they only pread,
// pwrite, fstat, ftruncate, fallocate, fsync and lseek(SEEK_DATA/HOLE),
// none of which depends on the descriptor's offset.
//
// Three rules keep it as right as a descriptor opened per request:
//
//   - A rollback may move a node's inode into the aside area (where it
//     is kept for unrevert) or put another inode at its name. A
//     descriptor opened before must not write there afterwards. So
//     every rollback step that moves or rewrites a node advances the
//     mount's ioGen (Mount.dropFd), and a descriptor is used only in the
//     generation it was opened in; later requests open the node afresh,
//     by name and checked, as before (ESTALE for a node whose inode was
//     replaced). Requests that change content take the journal's gate
//     before their descriptor (write.go, setattr.go), so none holds an
//     old one while a rollback runs.
//   - A descriptor open for writing makes an exec of the backing file
//     itself (outside the mount: execs through the mount exec the FUSE
//     file) fail with ETXTBSY, and opening for writing fails while one
//     runs. So reads keep a read-only descriptor, only writes a
//     writable one, and a writable one is closed once unused for
//     writerIdle to 2*writerIdle (writers.sweep).
//   - A descriptor names an inode, never a path: when something outside
//     the mount replaces the file, a kept descriptor goes on reaching
//     the inode the kernel's node stands for, as an open file does.

// writerIdle is how long a writable descriptor is kept unused, at
// least.
const writerIdle = 500 * time.Millisecond

// ioFd is the content descriptor a nodeFd keeps, under its mu.
type ioFd struct {
	open bool
	fd   int
	mode int // syscall.O_RDONLY or syscall.O_RDWR
	gen  uint64
	used atomic.Bool // since the writer sweep last passed
}

// suits reports whether the kept descriptor serves a request wanting
// mode in generation gen.
func (d *ioFd) suits(mode int, gen uint64) bool {
	return d.open && d.gen == gen && (d.mode == syscall.O_RDWR || mode == syscall.O_RDONLY)
}

// close closes the kept descriptor. The caller holds the nodeFd's mu
// exclusively.
func (d *ioFd) close() {
	if d.open {
		unix.Close(d.fd)
		d.open = false
	}
}

// keptIO returns n's kept content descriptor for mode, with n.fd.mu
// held shared, if there is one that suits.
func (n *Node) keptIO(mode int) (int, bool) {
	gen := n.fs.ioGen.Load()
	n.fd.mu.RLock()
	if !n.fd.held || !n.fd.io.suits(mode, gen) {
		n.fd.mu.RUnlock()
		return -1, false
	}
	n.fd.io.used.Store(true)
	n.fd.used.Store(true)
	return n.fd.io.fd, true
}

// keepIO gives n the content descriptor fd, opened for mode in
// generation gen, to keep, and reports whether it did; if not, fd is
// the caller's to close. Only a node holding a slot of the cache keeps
// one, and, as install, it never waits for n's lock.
func (c *fdCache) keepIO(n *Node, fd, mode int, gen uint64) bool {
	if !n.fd.mu.TryLock() {
		return false
	}
	defer n.fd.mu.Unlock()
	if !n.fd.held || n.fd.io.suits(mode, gen) {
		return false
	}
	n.fd.io.close()
	n.fd.io.open, n.fd.io.fd, n.fd.io.mode, n.fd.io.gen = true, fd, mode, gen
	n.fd.io.used.Store(true)
	if mode == syscall.O_RDWR {
		c.writers.add(n)
	}
	return true
}

// writers are the nodes keeping a writable descriptor.
type writers struct {
	mu       sync.Mutex
	nodes    map[*Node]struct{}
	sweeping bool // a sweep goroutine runs
	done     chan struct{}
}

// add notes that n keeps a writable descriptor, and starts the sweep
// if none runs. The caller holds n.fd.mu (the sweep only tries it).
func (w *writers) add(n *Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nodes == nil {
		w.nodes = map[*Node]struct{}{}
	}
	w.nodes[n] = struct{}{}
	if !w.sweeping && w.done != nil {
		w.sweeping = true
		go w.sweep(w.done)
	}
}

// sweep closes, every writerIdle, the writable descriptors not used
// since it last passed, until none is left or the mount is over.
func (w *writers) sweep(done <-chan struct{}) {
	t := time.NewTicker(writerIdle)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		w.mu.Lock()
		for n := range w.nodes {
			if n.fd.io.used.Swap(false) || !n.fd.mu.TryLock() {
				continue
			}
			if n.fd.io.mode == syscall.O_RDWR {
				n.fd.io.close()
			}
			n.fd.mu.Unlock()
			delete(w.nodes, n)
		}
		if len(w.nodes) == 0 {
			w.sweeping = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// stop ends the sweep; the descriptors are closed with the rest
// (fdCache.close).
func (w *writers) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		close(w.done)
		w.done = nil
	}
	w.nodes = nil
}
