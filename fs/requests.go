package fs

import (
	"sync/atomic"

	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
)

// Requests counts the FUSE requests a mount has served, per operation,
// so that a change adding round trips shows up (the bench prints them
// per workload). Counting wraps go-fuse's raw file system: one atomic
// add per request. INIT and INTERRUPT, which go-fuse answers itself,
// are not counted; a BATCH_FORGET counts one FORGET per node it names.
type counting struct {
	fuse.RawFileSystem
	n [numOps]atomic.Uint64
}

type op int

const (
	opLookup op = iota
	opForget
	opGetattr
	opSetattr
	opMknod
	opMkdir
	opUnlink
	opRmdir
	opRename
	opLink
	opSymlink
	opReadlink
	opAccess
	opGetxattr
	opListxattr
	opSetxattr
	opRemovexattr
	opCreate
	opTmpfile
	opOpen
	opRead
	opLseek
	opGetlk
	opSetlk
	opSetlkw
	opRelease
	opWrite
	opCopyFileRange
	opIoctl
	opFlush
	opFsync
	opFallocate
	opOpendir
	opReaddir
	opReaddirplus
	opReleasedir
	opFsyncdir
	opStatfs
	opStatx
	numOps
)

// opNames are the operations' names as FUSE gives them.
var opNames = [numOps]string{
	"LOOKUP", "FORGET", "GETATTR", "SETATTR", "MKNOD", "MKDIR", "UNLINK",
	"RMDIR", "RENAME", "LINK", "SYMLINK", "READLINK", "ACCESS", "GETXATTR",
	"LISTXATTR", "SETXATTR", "REMOVEXATTR", "CREATE", "TMPFILE", "OPEN",
	"READ", "LSEEK", "GETLK", "SETLK", "SETLKW", "RELEASE", "WRITE",
	"COPY_FILE_RANGE", "IOCTL", "FLUSH", "FSYNC", "FALLOCATE", "OPENDIR",
	"READDIR", "READDIRPLUS", "RELEASEDIR", "FSYNCDIR", "STATFS", "STATX",
}

// counts returns the operations served so far, by name; those never
// served are left out.
func (c *counting) counts() map[string]uint64 {
	m := map[string]uint64{}
	for i := range c.n {
		if v := c.n[i].Load(); v > 0 {
			m[opNames[i]] = v
		}
	}
	return m
}

func (c *counting) add(o op) { c.n[o].Add(1) }

func (c *counting) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opLookup)
	return c.RawFileSystem.Lookup(cancel, h, name, out)
}

func (c *counting) Forget(nodeid, nlookup uint64) {
	c.add(opForget)
	c.RawFileSystem.Forget(nodeid, nlookup)
}

func (c *counting) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	c.add(opGetattr)
	return c.RawFileSystem.GetAttr(cancel, in, out)
}

func (c *counting) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	c.add(opSetattr)
	return c.RawFileSystem.SetAttr(cancel, in, out)
}

func (c *counting) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opMknod)
	return c.RawFileSystem.Mknod(cancel, in, name, out)
}

func (c *counting) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opMkdir)
	return c.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (c *counting) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	c.add(opUnlink)
	return c.RawFileSystem.Unlink(cancel, h, name)
}

func (c *counting) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	c.add(opRmdir)
	return c.RawFileSystem.Rmdir(cancel, h, name)
}

func (c *counting) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	c.add(opRename)
	return c.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (c *counting) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opLink)
	return c.RawFileSystem.Link(cancel, in, name, out)
}

func (c *counting) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opSymlink)
	return c.RawFileSystem.Symlink(cancel, h, target, name, out)
}

func (c *counting) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	c.add(opReadlink)
	return c.RawFileSystem.Readlink(cancel, h)
}

func (c *counting) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	c.add(opAccess)
	return c.RawFileSystem.Access(cancel, in)
}

func (c *counting) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	c.add(opGetxattr)
	return c.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (c *counting) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	c.add(opListxattr)
	return c.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (c *counting) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	c.add(opSetxattr)
	return c.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (c *counting) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	c.add(opRemovexattr)
	return c.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (c *counting) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	c.add(opCreate)
	return c.RawFileSystem.Create(cancel, in, name, out)
}

func (c *counting) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	c.add(opTmpfile)
	return c.RawFileSystem.Tmpfile(cancel, in, out)
}

func (c *counting) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	c.add(opOpen)
	return c.RawFileSystem.Open(cancel, in, out)
}

func (c *counting) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	c.add(opRead)
	return c.RawFileSystem.Read(cancel, in, buf)
}

func (c *counting) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	c.add(opLseek)
	return c.RawFileSystem.Lseek(cancel, in, out)
}

func (c *counting) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	c.add(opGetlk)
	return c.RawFileSystem.GetLk(cancel, in, out)
}

func (c *counting) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	c.add(opSetlk)
	return c.RawFileSystem.SetLk(cancel, in)
}

func (c *counting) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	c.add(opSetlkw)
	return c.RawFileSystem.SetLkw(cancel, in)
}

func (c *counting) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	c.add(opRelease)
	c.RawFileSystem.Release(cancel, in)
}

// Writev counts a WRITE. (go-fuse calls Write only if Writev declines,
// which the node bridge never does.)
func (c *counting) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	c.add(opWrite)
	return c.RawFileSystem.Writev(cancel, in, data)
}

func (c *counting) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	c.add(opCopyFileRange)
	return c.RawFileSystem.CopyFileRange(cancel, in)
}

func (c *counting) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	c.add(opIoctl)
	return c.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (c *counting) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	c.add(opFlush)
	return c.RawFileSystem.Flush(cancel, in)
}

func (c *counting) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	c.add(opFsync)
	return c.RawFileSystem.Fsync(cancel, in)
}

func (c *counting) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	c.add(opFallocate)
	return c.RawFileSystem.Fallocate(cancel, in)
}

func (c *counting) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	c.add(opOpendir)
	return c.RawFileSystem.OpenDir(cancel, in, out)
}

func (c *counting) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	c.add(opReaddir)
	return c.RawFileSystem.ReadDir(cancel, in, out)
}

func (c *counting) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	c.add(opReaddirplus)
	return c.RawFileSystem.ReadDirPlus(cancel, in, out)
}

func (c *counting) ReleaseDir(in *fuse.ReleaseIn) {
	c.add(opReleasedir)
	c.RawFileSystem.ReleaseDir(in)
}

func (c *counting) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	c.add(opFsyncdir)
	return c.RawFileSystem.FsyncDir(cancel, in)
}

func (c *counting) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	c.add(opStatfs)
	return c.RawFileSystem.StatFs(cancel, h, out)
}

func (c *counting) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	c.add(opStatx)
	return c.RawFileSystem.Statx(cancel, in, out)
}
