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

// file is an open file. It forwards reads and harmless calls to go-fuse's
// LoopbackFile, but it deliberately has no PassthroughFd method: go-fuse
// would otherwise let the kernel write to the backing file directly
// (FUSE passthrough), and those writes would never reach the journal.
// Writes, truncation and fallocate go through Node, which records their
// pre-image first.
type file struct {
	lf     *gofs.LoopbackFile
	fd     int  // lf's descriptor; valid until Release
	opener *who // who opened it: writeback and mmap flushes arrive with pid 0
}

var (
	_ gofs.FileHandle    = (*file)(nil)
	_ gofs.FileReader    = (*file)(nil)
	_ gofs.FileReleaser  = (*file)(nil)
	_ gofs.FileFsyncer   = (*file)(nil)
	_ gofs.FileGetattrer = (*file)(nil)
	_ gofs.FileStatxer   = (*file)(nil)
	_ gofs.FileSetattrer = (*file)(nil)
	_ gofs.FileLseeker   = (*file)(nil)
	_ gofs.FileGetlker   = (*file)(nil)
	_ gofs.FileSetlker   = (*file)(nil)
	_ gofs.FileSetlkwer  = (*file)(nil)
)

// wrapFile takes over the handle a LoopbackNode method returned. go-fuse
// waits for requests on a handle to finish before it releases it, so
// fd stays valid for every request that carries the handle.
func wrapFile(fh gofs.FileHandle, opener *who) (*file, error) {
	lf, ok := fh.(*gofs.LoopbackFile)
	if !ok {
		return nil, fmt.Errorf("unexpected file handle %T", fh)
	}
	fd, ok := lf.PassthroughFd()
	if !ok {
		lf.Release(context.Background())
		return nil, syscall.EBADF
	}
	return &file{lf: lf, fd: fd, opener: opener}, nil
}

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return f.lf.Read(ctx, buf, off)
}

func (f *file) Release(ctx context.Context) syscall.Errno { return f.lf.Release(ctx) }

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return f.lf.Fsync(ctx, flags)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Getattr(ctx, out)
}

func (f *file) Statx(ctx context.Context, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	return f.lf.Statx(ctx, flags, mask, out)
}

// Setattr is reached only through Node.Setattr, after capture.
func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Setattr(ctx, in, out)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.lf.Lseek(ctx, off, whence)
}

func (f *file) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return f.lf.Getlk(ctx, owner, lk, flags, out)
}

func (f *file) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.lf.Setlk(ctx, owner, lk, flags)
}

func (f *file) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.lf.Setlkw(ctx, owner, lk, flags)
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
