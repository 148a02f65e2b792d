package fs

import (
	"context"
	"fmt"
	"os"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// file is a descriptor on a node's backing file, opened for one request
// (Node.ioFile): the kernel holds no handles of cowfs's (see io.go). It
// wraps go-fuse's LoopbackFile for the calls that can be forwarded, but
// has no PassthroughFd method, so go-fuse never hands it to the kernel:
// a passthrough write would never reach the journal.
type file struct {
	lf *gofs.LoopbackFile
	fd int // lf's descriptor; valid until Release
}

var (
	_ gofs.FileHandle    = (*file)(nil)
	_ gofs.FileReleaser  = (*file)(nil)
	_ gofs.FileFsyncer   = (*file)(nil)
	_ gofs.FileGetattrer = (*file)(nil)
	_ gofs.FileSetattrer = (*file)(nil)
	_ gofs.FileLseeker   = (*file)(nil)
)

// wrapFile takes over the handle a LoopbackNode method returned.
func wrapFile(fh gofs.FileHandle) (*file, error) {
	lf, ok := fh.(*gofs.LoopbackFile)
	if !ok {
		return nil, fmt.Errorf("unexpected file handle %T", fh)
	}
	fd, ok := lf.PassthroughFd()
	if !ok {
		lf.Release(context.Background())
		return nil, syscall.EBADF
	}
	return &file{lf: lf, fd: fd}, nil
}

func (f *file) Release(ctx context.Context) syscall.Errno { return f.lf.Release(ctx) }

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return f.lf.Fsync(ctx, flags)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Getattr(ctx, out)
}

// Setattr is reached only through Node.Setattr, after capture.
func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Setattr(ctx, in, out)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.lf.Lseek(ctx, off, whence)
}

// fstat stats the open file.
func (f *file) fstat() (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return nil, fmt.Errorf("fstat: %w", err)
	}
	return &st, nil
}

// pwritev writes data at off.
func (f *file) pwritev(data [][]byte, off int64) (int, error) {
	if len(data) == 1 {
		return syscall.Pwrite(f.fd, data[0], off)
	}
	return unix.Pwritev(f.fd, data, off)
}

// reader returns a reader of the file's current content, usable even if
// the file was opened write-only or has been unlinked.
func (f *file) reader() (*os.File, error) {
	return os.Open(fmt.Sprintf("/proc/self/fd/%d", f.fd))
}
