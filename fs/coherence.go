package fs

import (
	"sync/atomic"
	"syscall"
	"time"
)

// Keeping the kernel's page cache of a regular file across the
// daemon's own writes.
//
// With the kernel's auto_inval_data, any reply carrying attributes
// whose mtime or size differs from what the kernel last saw drops the
// file's whole page cache. Without the writeback cache the kernel never
// sets mtime itself, so the daemon's own WRITE is such a change: write
// 4 KiB, stat or read the file, and every cached page of it is gone. A
// random-write load read back (a database, fio's verify) sent a READ
// for nearly every block it had just written.
//
// With long cache timeouts (explicitData) the mount asks for explicit
// data cache control instead: the kernel keeps pages across attribute
// changes (it still cuts them at a smaller size), and the daemon tells
// it when content changed behind the mount's back, as the kernel would
// have noticed it: by mtime and size, whenever it answers with a file's
// attributes (GETATTR, STATX, SETATTR, LOOKUP). A node remembers the
// mtime and size it last answered with, and whether a change through
// the mount (a WRITE, FALLOCATE or SETATTR) may have moved them since;
// an answer that differs with no such change invalidates the file's
// pages (off the reader: an invalidation waits for pages a READ in
// flight holds). Where a change through the mount and one behind it
// land between two answers, the second goes unnoticed until the next
// turn boundary's rescan, which invalidates what changed outside; that
// is the price of a writer on each side of the mount at once.
//
// Short timeouts (under explicitDataFrom) say changes behind the mount
// are expected and should be seen soon; those mounts keep
// auto_inval_data, whose check also runs on reads through a descriptor
// held open, which the daemon never sees.
const explicitDataFrom = time.Minute

// contentStamp is what a node last told the kernel of its content.
type contentStamp struct {
	mtime atomic.Int64 // ns; 0: never answered
	size  atomic.Int64
	// changed is set before the daemon changes the content or times
	// through the mount, and cleared by the next answer.
	changed atomic.Bool
}

// changing notes that the daemon is about to change n's content or
// times.
func (n *Node) changing() {
	if n.fs.explicitData() {
		n.stamp.changed.Store(true)
	}
}

// answered notes the mtime (ns) and size n's attributes are answered
// with, and invalidates its pages if they moved with no change through
// the mount since the last answer.
func (n *Node) answered(mtime, size int64) {
	if !n.fs.explicitData() || n.typ() != syscall.S_IFREG {
		return
	}
	changed := n.stamp.changed.Swap(false)
	oldM, oldS := n.stamp.mtime.Swap(mtime), n.stamp.size.Swap(size)
	if oldM != 0 && !changed && (oldM != mtime || oldS != size) {
		n.fs.apart(func() { n.NotifyContent(0, 0) })
	}
}
