package fs

import (
	"syscall"

	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
)

// Directories are not opened either. Listing a directory cost two round
// trips besides its READDIRs, OPENDIR and RELEASEDIR — `rm -rf` and
// `grep -r` open every directory of a tree, and a second `grep -r`
// over cached pages and listings asked for nothing else. So, as for
// files (io.go), the first OPENDIR is answered ENOSYS, and the kernel
// then opens and closes directories without asking (FUSE's
// no_opendir). It treats such opens as FOPEN_KEEP_CACHE|FOPEN_CACHE_DIR
// — what OpendirHandle answered anyway — so listings stay cached
// across opens, dropped when an entry changes through the mount or a
// rollback invalidates the directory.
//
// The READDIR, READDIRPLUS and FSYNCDIR requests that still come carry
// no handle. noOpendir serves each through a handle of its own: it asks
// go-fuse's bridge to open the directory (Node.OpendirHandle), serves
// the request through that handle from the offset the kernel gives —
// the backing filesystem's own offset cookie, which the handle seeks
// to — and releases it. The backing directory is thus opened once per
// request instead of once per open, which costs a descriptor's open
// and close, not a round trip.
//
// With caching off (--cache-timeout 0) directories are opened as before:
// no_opendir would make the kernel cache listings regardless.
type noOpendir struct {
	fuse.RawFileSystem
}

func (d noOpendir) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

func (d noOpendir) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return d.opened(cancel, &in.InHeader, &in.Fh, func() fuse.Status { return d.RawFileSystem.ReadDir(cancel, in, out) })
}

func (d noOpendir) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return d.opened(cancel, &in.InHeader, &in.Fh, func() fuse.Status { return d.RawFileSystem.ReadDirPlus(cancel, in, out) })
}

func (d noOpendir) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return d.opened(cancel, &in.InHeader, &in.Fh, func() fuse.Status { return d.RawFileSystem.FsyncDir(cancel, in) })
}

// opened runs serve with *fh set to a handle of h's directory, opened
// for it and released after (every OPENDIR is refused, so the kernel
// gives none).
func (d noOpendir) opened(cancel <-chan struct{}, h *fuse.InHeader, fh *uint64, serve func() fuse.Status) fuse.Status {
	in := fuse.OpenIn{InHeader: *h, Flags: syscall.O_RDONLY | syscall.O_DIRECTORY}
	var out fuse.OpenOut
	if st := d.RawFileSystem.OpenDir(cancel, &in, &out); !st.Ok() {
		return st
	}
	*fh = out.Fh
	defer func() {
		d.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: *h, Fh: out.Fh})
		*fh = 0
	}()
	return serve()
}
