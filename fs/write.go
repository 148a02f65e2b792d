package fs

import (
	"context"
	"io"
	"syscall"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
)

// Content changes. Every one arrives here, but writes to a file the
// epoch created, which the kernel makes itself (passthrough.go): a
// WRITE, an mmap flush, a truncation, a fallocate. Before each, the bytes it overwrites or cuts off are
// journaled, as far as they existed when the epoch began and are not
// journaled already; appends journal nothing but the first touch.

// beforeContent journals what a change to bytes [lo, hi) of n is about
// to destroy: n's attributes at its first touch in the epoch, then the
// pre-image of those bytes. fd is a readable descriptor of n the change
// comes through, or -1 to open one.
func (n *Node) beforeContent(c *change, fd int, lo, hi int64, cause journal.Cause) error {
	id := n.StableAttr().Ino
	s := c.state(id)
	defer s.Unlock()
	if s.Created() {
		return nil
	}
	rel, ok := n.rel()
	if !ok {
		return nil // in no directory and not kept aside: nothing can restore it
	}
	src := func() (io.ReaderAt, func(), error) {
		if fd >= 0 {
			return capture.File(fd), noop, nil
		}
		r, e := n.open(syscall.O_RDONLY)
		if e != 0 {
			return nil, nil, e
		}
		return capture.File(r), func() { unix.Close(r) }, nil
	}
	if !s.Touched() {
		st, err := n.statVia(fd)
		if err != nil {
			return err
		}
		if err := c.op.Attr(s, id, rel, st, cause); err != nil {
			return err
		}
	}
	// If this fails, the change fails (change.fail), which withdraws
	// the touch too: the change is not listed.
	return c.op.Data(s, id, rel, src, lo, hi)
}

// statVia stats n through fd if it is one, else through a descriptor of
// its own.
func (n *Node) statVia(fd int) (*unix.Stat_t, error) {
	if fd >= 0 {
		return backing.Fstat(fd)
	}
	st, e := n.stat()
	if e != 0 {
		return nil, e
	}
	return st, nil
}

var (
	_ = (gofs.NodeWriter)((*Node)(nil))
	_ = (gofs.NodeWritever)((*Node)(nil))
)

func (n *Node) Write(ctx context.Context, fh gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	return n.Writev(ctx, fh, [][]byte{data}, off)
}

func (n *Node) Writev(ctx context.Context, fh gofs.FileHandle, data [][]byte, off int64) (uint32, syscall.Errno) {
	c := n.fs.rec.begin(ctx, n.writer())
	defer c.end()
	var size int64
	for _, d := range data {
		size += int64(len(d))
	}
	if n.fs.writebacks.is(ctx) {
		// A page of a shared mapping (writeback.go). One cached before
		// a rollback rewrote the file carries the bytes it replaced:
		// refused, before anything is journaled (rewritten.go).
		n.fs.writebacks.mapped.Store(n, struct{}{})
		if n.refuseStale(c, off, off+size) {
			return 0, syscall.EIO
		}
	}
	// Read and write: the same descriptor gives the pre-image.
	fd, done, appendOnly, e := n.writeFile()
	if e != 0 {
		return 0, e
	}
	defer done()
	if appendOnly {
		if e := atEnd(fd, off); e != 0 {
			return 0, e
		}
	}
	if err := n.beforeContent(c, fd, off, off+size, journal.CauseWrite); err != nil {
		return 0, c.fail(err)
	}
	if err := c.did(killPriv(fd, c.who())); err != nil {
		return 0, c.fail(err)
	}
	n.changing()
	var w int
	var err error
	if len(data) == 1 {
		w, err = unix.Pwrite(fd, data[0], off)
	} else {
		w, err = unix.Pwritev(fd, data, off)
	}
	// A write that fails has written nothing (one that wrote some
	// bytes returns their count): its records go, unless killPriv
	// changed the mode first.
	if err := c.did(err); err != nil {
		return 0, c.fail(err)
	}
	return uint32(max(w, 0)), 0
}

// writeFile returns a descriptor of n's backing file to write through,
// readable too, and done, to call when the request is done with it.
// An append-only file (chattr +a) opens for writing only with O_APPEND,
// as natively; then appendOnly is set, and every write through the
// descriptor goes to the end of the file, whatever its offset.
func (n *Node) writeFile() (fd int, done func(), appendOnly bool, e syscall.Errno) {
	fd, done, e = n.ioFile(syscall.O_RDWR)
	if e != syscall.EPERM || n.typ() != syscall.S_IFREG {
		return fd, done, false, e
	}
	// Refused: immutable, or append-only. Appends to an append-only
	// file are rare, so the descriptor is not kept (ioFile keeps one
	// mode of descriptor per file).
	afd, ae := n.open(syscall.O_RDWR | syscall.O_APPEND)
	if ae != 0 {
		return -1, nil, false, e
	}
	return afd, func() { unix.Close(afd) }, true, 0
}

// atEnd checks that a write at off to the append-only file fd is an
// append: natively only a descriptor opened with O_APPEND writes to such
// a file, and every write through it goes to the end. The kernel sends
// an O_APPEND write at the end of the file as it knows it; a write
// anywhere else comes through a descriptor that natively could not
// have been opened (the mount does not see opens: io.go), and is
// refused as that open would have been.
func atEnd(fd int, off int64) syscall.Errno {
	st, err := backing.Fstat(fd)
	if err != nil {
		return errno(err)
	}
	if off != st.Size {
		return syscall.EPERM
	}
	return 0
}

var _ = (gofs.NodeAllocater)((*Node)(nil))

func (n *Node) Allocate(ctx context.Context, fh gofs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	c := n.fs.rec.begin(ctx, n.writer())
	defer c.end()
	fd, done, appendOnly, e := n.writeFile()
	if e != 0 {
		return e
	}
	defer done()
	if appendOnly && mode&^unix.FALLOC_FL_KEEP_SIZE != 0 {
		return syscall.EPERM // as natively: an append-only file only grows
	}
	lo, hi := int64(off), int64(off+size)
	switch {
	case mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0:
		// [lo, hi) becomes zeros.
	case mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0:
		hi = capture.ToEnd // everything from lo on moves
	default:
		lo, hi = 0, 0 // allocation destroys nothing; only the size may grow
	}
	if err := n.beforeContent(c, fd, lo, hi, journal.CauseWrite); err != nil {
		return c.fail(err)
	}
	n.changing()
	if err := c.did(unix.Fallocate(fd, mode, int64(off), int64(size))); err != nil {
		return c.fail(err)
	}
	return 0
}

var _ = (gofs.NodeFlusher)((*Node)(nil))

// Flush declines: closing a loopback file has nothing to flush, and a
// FUSE server that answers FLUSH with ENOSYS is not sent it again, which
// saves a round trip on every close. (Locks are
// the kernel's; see io.go.)
func (n *Node) Flush(ctx context.Context, fh gofs.FileHandle) syscall.Errno {
	return syscall.ENOSYS
}

var _ = (gofs.NodeCopyFileRanger)((*Node)(nil))

// CopyFileRange declines, so the kernel copies with reads and writes,
// which are journaled like any other. (The kernel then stops asking.)
func (n *Node) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut, size, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

var _ = (gofs.NodeIoctler)((*Node)(nil))

// Ioctl refuses every ioctl: some change content (FICLONE, FIDEDUPERANGE)
// or flags in ways the journal cannot capture.
func (n *Node) Ioctl(ctx context.Context, fh gofs.FileHandle, cmd uint32, arg uint64, input, output []byte) (int32, syscall.Errno) {
	return 0, syscall.ENOTTY
}
