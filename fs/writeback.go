package fs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"
)

// The kernel's writebacks of shared writable mappings.
//
// The mount has no writeback cache, so write(2) reaches the daemon as
// it is made; only a page a process dirtied through a shared writable
// mapping reaches it later, when the kernel writes it back: a WRITE
// flagged FUSE_WRITE_CACHE, with pid 0. That is when it is journaled,
// so where a change belongs (a turn, the time between turns, before or
// after a rollback) depends on when the kernel sends it. Turn
// boundaries and rollbacks therefore make the kernel send every dirty
// page first (FlushWriteback).

// writebacks knows which WRITE requests in flight are the kernel's
// writebacks of cached pages (FUSE_WRITE_CACHE), which go-fuse's node
// API does not say: writebackFS, in front of it, notes each under the
// request's cancel channel, which is the request's own while it runs.
// It also remembers the nodes written back so (mapped): files a process
// maps shared and writable.
type writebacks struct {
	inFlight sync.Map // cancel channel -> struct{}
	mapped   sync.Map // *Node -> struct{}
}

// is reports whether the request of ctx (go-fuse's *fuse.Context, whose
// Done is the request's cancel channel) is a writeback.
func (w *writebacks) is(ctx context.Context) bool {
	done := ctx.Done()
	if done == nil {
		return false
	}
	_, wb := w.inFlight.Load(done)
	return wb
}

// writebackFS notes writebacks in flight (writebacks).
type writebackFS struct {
	fuse.RawFileSystem
	wb *writebacks
}

func (f writebackFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if in.WriteFlags&fuse.WRITE_CACHE != 0 {
		f.wb.inFlight.Store(cancel, struct{}{})
		defer f.wb.inFlight.Delete(cancel)
	}
	return f.RawFileSystem.Write(cancel, in, data)
}

func (f writebackFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if in.WriteFlags&fuse.WRITE_CACHE != 0 {
		f.wb.inFlight.Store(cancel, struct{}{})
		defer f.wb.inFlight.Delete(cancel)
	}
	return f.RawFileSystem.Writev(cancel, in, data)
}

// FlushWriteback makes the kernel write every page dirtied through the
// mount back to the daemon now, so those writes are journaled in the
// epoch that made them, and waits for the files known to be mapped. The
// caller must not hold the journal's gate: the writes need it.
//
// syncfs starts the writeback of every dirty page of the mount, but does
// not wait for it to end: the kernel does not wait for a FUSE server in
// a sync (one that never answers would hang it), and a WRITE it started
// can reach the daemon after syncfs returned. sync_file_range on a file
// waits for that file's pages. So each file whose pages the kernel has
// written back before (writebacks.mapped) is opened through the mount
// and waited for. A file mapped and written to for the first time since
// the last flush may still be written back after this returns, and its
// write then belongs to the epoch after the boundary. (A rollback waits
// for those too: FlushMappedWriteback.)
func (m *Mount) FlushWriteback() error {
	root, err := unix.Open(m.mountpoint, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("flush writeback: %w", err)
	}
	defer unix.Close(root)
	if err := unix.Syncfs(root); err != nil {
		return fmt.Errorf("flush writeback: %w", err)
	}
	var errs []error
	m.root.fs.writebacks.mapped.Range(func(k, _ any) bool {
		if err := m.waitWriteback(root, k.(*Node)); err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return errors.Join(errs...)
}

// waitWriteback writes n's dirty pages back and waits until the daemon
// has answered every writeback of them, through a descriptor of n's
// kernel inode opened beneath root, the mount's root. A node with no
// name in the mount, or whose name now leads elsewhere, is left alone.
func (m *Mount) waitWriteback(root int, n *Node) error {
	p, ok := n.rel()
	if !ok || p == "" {
		return nil
	}
	fd, err := unix.Openat2(root, p, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil // gone, or hidden (kept aside): the kernel holds it only through its mappers
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Ino != n.StableAttr().Ino || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil
	}
	const all = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	err = unix.SyncFileRange(fd, 0, 0, all)
	if errors.Is(err, syscall.EIO) {
		// A writeback of the file failed, now or before (the kernel
		// tells the first to ask; the writer learns it from its own
		// msync or fsync): its pages are not dirty any more either way.
		return nil
	}
	if err != nil {
		return fmt.Errorf("flush writeback of %s: %w", p, err)
	}
	return nil
}
