package fs

import (
	"context"
	"os"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
)

// Content changes. Every one arrives here because open files have no
// passthrough (see file): a WRITE, an mmap flush, a truncation, a
// fallocate. Before each, the bytes it overwrites or cuts off are
// journaled, as far as they existed when the epoch began and are not
// journaled already; appends journal nothing but the first touch.

// open does in change c what an OPEN of n with flags would do to the
// backing file: journal the content O_TRUNC is about to cut off, then
// cut it. It keeps no handle (io.go).
func (n *Node) open(c *change, flags uint32) syscall.Errno {
	trunc := flags&syscall.O_TRUNC != 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY
	if trunc {
		if err := n.beforeContent(c, nil, 0, 1<<62, journal.CauseWrite); err != nil {
			return errno(err)
		}
	}
	f, done, e := n.ioFile(int(flags))
	if e != 0 {
		return e
	}
	defer done()
	if trunc {
		return errno(killPriv(f.fd, c.caller.raw.Uid))
	}
	return 0
}

// beforeContent journals what a change to bytes [lo, hi) of n is about
// to destroy: n's attributes at its first touch in the epoch, then the
// pre-image of those bytes. f is the open file the change comes
// through, or nil to use n's path.
func (n *Node) beforeContent(c *change, f *file, lo, hi int64, cause journal.Cause) error {
	id := n.StableAttr().Ino
	s := c.state(id)
	defer s.mu.Unlock()
	if s.created {
		return nil
	}
	rel, ok := n.rel()
	if !ok {
		return nil // in no directory and not kept aside: nothing can restore it
	}
	src := func() (*os.File, error) {
		if f != nil {
			return f.reader()
		}
		return os.OpenFile(n.abs(rel), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	}
	var touched *journal.Record
	if !s.attr {
		st, err := n.stat(f, rel)
		if err != nil {
			return err
		}
		if touched, err = c.touch(s, id, rel, st, cause); err != nil {
			return err
		}
	}
	if err := c.save(s, id, rel, src, lo, hi); err != nil {
		c.untouch(s, touched)
		return err
	}
	return nil
}

// stat stats n through f if given, else through its path.
func (n *Node) stat(f *file, rel string) (*syscall.Stat_t, error) {
	if f != nil {
		return f.fstat()
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(n.abs(rel), &st); err != nil {
		return nil, err
	}
	return &st, nil
}

var (
	_ = (gofs.NodeWriter)((*Node)(nil))
	_ = (gofs.NodeWritever)((*Node)(nil))
)

func (n *Node) Write(ctx context.Context, fh gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	return n.Writev(ctx, fh, [][]byte{data}, off)
}

func (n *Node) Writev(ctx context.Context, fh gofs.FileHandle, data [][]byte, off int64) (uint32, syscall.Errno) {
	f, done, e := n.ioFile(syscall.O_WRONLY)
	if e != 0 {
		return 0, e
	}
	defer done()
	var size int64
	for _, d := range data {
		size += int64(len(d))
	}
	c := n.fs.rec.begin(ctx, n.writer())
	defer c.end()
	if err := n.beforeContent(c, f, off, off+size, journal.CauseWrite); err != nil {
		return 0, errno(err)
	}
	if err := killPriv(f.fd, c.caller.raw.Uid); err != nil {
		return 0, errno(err)
	}
	w, err := f.pwritev(data, off)
	return uint32(max(w, 0)), errno(err)
}

var _ = (gofs.NodeAllocater)((*Node)(nil))

func (n *Node) Allocate(ctx context.Context, fh gofs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	f, done, e := n.ioFile(syscall.O_WRONLY)
	if e != 0 {
		return e
	}
	defer done()
	c := n.fs.rec.begin(ctx, n.writer())
	defer c.end()
	lo, hi := int64(off), int64(off+size)
	switch {
	case mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0:
		// [lo, hi) becomes zeros.
	case mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0:
		hi = 1 << 62 // everything from lo on moves
	default:
		lo, hi = 0, 0 // allocation destroys nothing; only the size may grow
	}
	if err := n.beforeContent(c, f, lo, hi, journal.CauseWrite); err != nil {
		return errno(err)
	}
	return errno(unix.Fallocate(f.fd, mode, int64(off), int64(size)))
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
