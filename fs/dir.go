package fs

import (
	"context"
	"syscall"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
)

var _ = (gofs.NodeOpendirHandler)((*Node)(nil))

// OpendirHandle lists the directory through a descriptor of its own
// inode, for one request (noOpendir, opendir.go), or for an open when
// caching is off. With caching on, the kernel caches listings
// (FOPEN_CACHE_DIR): it drops the cache itself when an entry changes
// through the mount, and a rollback invalidates the directories it
// changes.
func (n *Node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fd, e := n.open(unix.O_RDONLY | unix.O_DIRECTORY)
	if e != 0 {
		return nil, 0, e
	}
	ds, e := gofs.NewLoopbackDirStreamFd(fd)
	if e != 0 {
		unix.Close(fd)
		return nil, 0, e
	}
	var fl uint32
	if n.fs.keepCache() {
		fl |= fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	fh := ds.(gofs.FileHandle)
	if n.IsRoot() {
		fh = &hidingDir{fh}
	}
	return fh, fl, 0
}

// hidingDir is the root directory's listing without cowfs's private
// directory.
type hidingDir struct{ gofs.FileHandle }

var (
	_ gofs.FileReaddirenter = (*hidingDir)(nil)
	_ gofs.FileSeekdirer    = (*hidingDir)(nil)
	_ gofs.FileReleasedirer = (*hidingDir)(nil)
	_ gofs.FileFsyncdirer   = (*hidingDir)(nil)
)

func (d *hidingDir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	r := d.FileHandle.(gofs.FileReaddirenter)
	for {
		de, e := r.Readdirent(ctx)
		if e != 0 || de == nil || de.Name != aside.Dir {
			return de, e
		}
	}
}

func (d *hidingDir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.FileHandle.(gofs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *hidingDir) Releasedir(ctx context.Context, flags uint32) {
	d.FileHandle.(gofs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *hidingDir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.FileHandle.(gofs.FileFsyncdirer).Fsyncdir(ctx, flags)
}
