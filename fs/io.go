package fs

import (
	"context"
	"syscall"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"
)

// Opens. With passthrough on (the default: passthrough.go) every open is
// answered: a file the epoch created gets its backing file, any other a
// handle that changes nothing (requests are served by node, below), with
// FOPEN_KEEP_CACHE and FOPEN_NOFLUSH, so an open costs one round trip
// and a close none but an asynchronous RELEASE. The kernel refuses an
// open of an inode held in passthrough mode that is not passthrough
// too, which an unseen open never is; so opens cannot stay unseen with
// passthrough on.
//
// Without --passthrough (the default), opens are not seen. Node.Open answers ENOSYS,
// and the kernel then stops sending OPEN and RELEASE for files of the
// mount (FUSE's no_open):
// opening and closing a file costs no round trip, and that round trip
// is most of what reading a tree through FUSE costs once its pages are
// cached (grep -r, git add, a compiler). The kernel keeps a file's pages
// across opens (no_open implies FOPEN_KEEP_CACHE); rollbacks invalidate
// what they change (Mount.Changed, Mount.Moved), and with
// --cache-timeout 0 the kernel checks size and mtime before it uses
// them (auto_inval_data).
//
// Capture does not depend on opens: a change still arrives as WRITE,
// SETATTR or FALLOCATE and is journaled there. O_TRUNC arrives as a
// SETATTR of the size, since cowfs does not negotiate atomic O_TRUNC.
//
// No request needs a handle (with opens off, none carries one: the
// kernel sends no RELEASE either, and CREATE is declined too,
// Node.Create). A request is served through a descriptor of the node's own inode, opened
// following no symlink and kept for the next ones (handle.go, iofd.go):
// the same file a handle would have held. A file made with O_TMPFILE is
// kept in the aside area, where requests reach it (Node.Tmpfile).
//
// A file whose names were all removed while open is kept aside — even
// one created in the same epoch (Node.keptWhileUsed) — and its aside
// entry is not freed while the kernel may still use the node
// (aside.Area.SetInUse, Node.OnForget), so it stays readable and
// writable like any open unlinked file.
//
// What is not known without opens is who opened a file. Writes through
// a shared mapping reach the daemon with pid 0 when the kernel flushes
// the pages; they are attributed to a process that maps the file at
// that moment (Node.writer), and to pid 0 when none does any more.
// Locks are the kernel's own (Mount leaves go-fuse's EnableLocks off):
// they hold among every process using the mount.

var _ = (gofs.NodeOpener)((*Node)(nil))

// Open declines, which tells the kernel not to send opens at all,
// unless passthrough is on (passthrough.go): the kernel refuses an open
// of an inode that another open holds in passthrough mode unless it is
// in that mode too, so every open is answered, and the files the epoch
// created get their backing file.
func (n *Node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if n.fs.pass.declines() {
		return nil, 0, syscall.ENOSYS
	}
	fh, fl := n.openHandle(ctx)
	return fh, fl, 0
}

// ioFile returns a descriptor of n's backing file open with flags for
// one request (handle.go), and done, to call when the request is done
// with it. A regular file's is kept for the next requests (iofd.go);
// a directory's is opened for the request. Only regular files and
// directories are opened (a FIFO would block). A request that changes
// content calls it inside its change (after recorder.begin).
func (n *Node) ioFile(flags int) (fd int, done func(), e syscall.Errno) {
	if !n.opensOwn() {
		return -1, nil, syscall.EBADF
	}
	// The kernel computes append offsets; FMODE_EXEC is not an open flag.
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	keep := n.typ() == syscall.S_IFREG && flags&^syscall.O_ACCMODE == 0
	if keep {
		if fd, ok := n.keptIO(flags); ok {
			return fd, n.fd.mu.RUnlock, 0
		}
		if _, done, e := n.inode(); e == 0 {
			done() // a slot to keep the descriptor in
		}
	}
	gen := n.fs.ioGen.Load()
	fd, e = n.open(flags)
	if e != 0 {
		return -1, nil, e
	}
	if keep && n.fs.fds.keepIO(n, fd, flags, gen) {
		if kept, ok := n.keptIO(flags); ok {
			return kept, n.fd.mu.RUnlock, 0
		}
		// Evicted already, or a rollback came between: one for this
		// request only.
		if fd, e = n.open(flags); e != 0 {
			return -1, nil, e
		}
	}
	return fd, func() { unix.Close(fd) }, 0
}

// opensOwn reports whether ioFile can open n: a regular file or a
// directory.
func (n *Node) opensOwn() bool {
	t := n.typ()
	return t == syscall.S_IFREG || t == syscall.S_IFDIR
}

var _ = (gofs.NodeReader)((*Node)(nil))

func (n *Node) Read(ctx context.Context, fh gofs.FileHandle, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n.saw(ctx)
	fd, done, e := n.ioFile(syscall.O_RDONLY)
	if e != 0 {
		return nil, e
	}
	defer done()
	// Taken before reading: the read is of restored bytes only if it
	// began after a rollback marked them (rewritten.go).
	mark := n.fs.rewrites.markOf(n.EmbeddedInode())
	// Read now: go-fuse would splice from a ReadResultFd after done.
	m, err := unix.Pread(fd, buf, off)
	if err != nil {
		return nil, errno(err)
	}
	n.fs.rewrites.read(n.EmbeddedInode(), mark, off, off+int64(len(buf)))
	return fuse.ReadResultData(buf[:m]), 0
}

var _ = (gofs.NodeFsyncer)((*Node)(nil))

// fsyncDatasync is FUSE_FSYNC_FDATASYNC: only the data need be synced.
const fsyncDatasync = 1

func (n *Node) Fsync(ctx context.Context, fh gofs.FileHandle, flags uint32) syscall.Errno {
	fd, done, e := n.ioFile(syscall.O_RDONLY)
	if e != 0 {
		return e
	}
	defer done()
	if flags&fsyncDatasync != 0 {
		return errno(unix.Fdatasync(fd))
	}
	return errno(unix.Fsync(fd))
}

var _ = (gofs.NodeLseeker)((*Node)(nil))

// Lseek answers SEEK_DATA and SEEK_HOLE from the backing file.
func (n *Node) Lseek(ctx context.Context, fh gofs.FileHandle, off uint64, whence uint32) (uint64, syscall.Errno) {
	fd, done, e := n.ioFile(syscall.O_RDONLY)
	if e != 0 {
		return 0, e
	}
	defer done()
	r, err := unix.Seek(fd, int64(off), int(whence))
	return uint64(r), errno(err)
}
