package backing

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Operations on one inode through a descriptor of it. The descriptor is
// usually O_PATH (opened with O_NOFOLLOW, so it may name a symlink or a
// special file without opening it). Calls that take no descriptor of
// that kind go through its /proc/self/fd entry, a "magic link" that
// names exactly the inode the descriptor holds: no component of a path
// the workspace controls is resolved again.

// FdPath is the /proc/self/fd path of descriptor fd.
func FdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// Fstat stats the inode fd holds (a symlink itself, for a symlink).
func Fstat(fd int) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: FdPath(fd), Err: err}
	}
	return &st, nil
}

// Reopen opens the inode fd holds afresh with flags: an O_PATH
// descriptor cannot read or write.
func Reopen(fd int, flags int) (int, error) {
	r, err := unix.Open(FdPath(fd), flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return -1, &os.PathError{Op: "reopen", Path: FdPath(fd), Err: err}
	}
	return r, nil
}

// Readlink returns the target of the symlink fd holds.
func Readlink(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: FdPath(fd), Err: err}
	}
	return string(buf[:n]), nil
}

// Chmod sets the permission bits (07777) of the inode fd holds. A
// symlink has none (EOPNOTSUPP).
func Chmod(fd int, mode uint32) error {
	if err := unix.Fchmodat(fd, "", mode&07777, unix.AT_EMPTY_PATH); err != nil {
		return &os.PathError{Op: "chmod", Path: FdPath(fd), Err: err}
	}
	return nil
}

// Chown sets the owner of the inode fd holds; -1 leaves one as it is.
func Chown(fd, uid, gid int) error {
	if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chown", Path: FdPath(fd), Err: err}
	}
	return nil
}

// Utimens sets the access and modification times of the inode fd holds
// (UTIME_OMIT and UTIME_NOW work as in utimensat).
func Utimens(fd int, atime, mtime unix.Timespec) error {
	ts := []unix.Timespec{atime, mtime}
	if err := unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimens", Path: FdPath(fd), Err: err}
	}
	return nil
}

// Getxattr returns the value of xattr name of the inode fd holds, and
// whether it has one. (The xattr calls follow the magic link to the
// inode itself, also for a symlink; *xattrat with AT_EMPTY_PATH refuses
// O_PATH descriptors on the kernels this runs on.)
func Getxattr(fd int, name string) ([]byte, bool, error) {
	p := FdPath(fd)
	for size := 256; ; {
		buf := make([]byte, size)
		n, err := unix.Getxattr(p, name, buf)
		switch {
		case errors.Is(err, unix.ENODATA):
			return nil, false, nil
		case errors.Is(err, unix.ERANGE):
			if size, err = unix.Getxattr(p, name, nil); err != nil {
				return nil, false, &os.PathError{Op: "getxattr", Path: p, Err: err}
			}
			continue
		case err != nil:
			return nil, false, &os.PathError{Op: "getxattr", Path: p, Err: err}
		}
		return buf[:n], true, nil
	}
}

// GetxattrInto is getxattr(2) on the inode fd holds: it fills dest, or
// with an empty dest returns the value's size.
func GetxattrInto(fd int, name string, dest []byte) (int, error) {
	return unix.Getxattr(FdPath(fd), name, dest)
}

// Listxattr is listxattr(2) on the inode fd holds.
func Listxattr(fd int, dest []byte) (int, error) {
	return unix.Listxattr(FdPath(fd), dest)
}

// Setxattr is setxattr(2) on the inode fd holds.
func Setxattr(fd int, name string, value []byte, flags int) error {
	return unix.Setxattr(FdPath(fd), name, value, flags)
}

// Removexattr is removexattr(2) on the inode fd holds.
func Removexattr(fd int, name string) error {
	return unix.Removexattr(FdPath(fd), name)
}

// PutXattr sets xattr name of the inode fd holds to value, or removes
// it if !exists (an absent one is no error).
func PutXattr(fd int, name string, value []byte, exists bool) error {
	var err error
	if exists {
		err = Setxattr(fd, name, value, 0)
	} else if err = Removexattr(fd, name); errors.Is(err, unix.ENODATA) {
		err = nil
	}
	if err != nil {
		return &os.PathError{Op: "setxattr", Path: FdPath(fd), Err: err}
	}
	return nil
}

// RemoveAll removes name in directory dir and, if it is a directory,
// everything beneath it, without following any symlink: each directory
// is opened relative to the one holding it with O_NOFOLLOW. A name
// already gone is no error.
func RemoveAll(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) {
		return &os.PathError{Op: "unlink", Path: name, Err: err}
	}
	for try := 0; ; try++ {
		fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: name, Err: err}
		}
		f := os.NewFile(uintptr(fd), name)
		names, err := f.Readdirnames(-1)
		if err == nil {
			for _, n := range names {
				if err = RemoveAll(fd, n); err != nil {
					break
				}
			}
		}
		f.Close()
		if err != nil {
			return err
		}
		err = unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.ENOTEMPTY) && try < 3:
			continue // something appeared meanwhile
		}
		return &os.PathError{Op: "rmdir", Path: name, Err: err}
	}
}

// RemoveContents removes everything in the open directory dir (any
// descriptor of it), as RemoveAll does beneath a name.
func RemoveContents(dir int) error {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: FdPath(dir), Err: err}
	}
	f := os.NewFile(uintptr(fd), FdPath(dir))
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := RemoveAll(fd, n); err != nil {
			return err
		}
	}
	return nil
}

// Lstatat stats name in directory dir without following it, and
// returns with it the inode's birth time as a generation number that
// tells an inode number reused after a deletion from the one before (1
// where the filesystem keeps no birth time).
func Lstatat(dir int, name string) (*unix.Stat_t, uint64, error) {
	var sx unix.Statx_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if err := unix.Statx(dir, name, flags, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &sx); err != nil {
		return nil, 0, &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	st := &unix.Stat_t{
		Dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), Ino: sx.Ino, Nlink: uint64(sx.Nlink),
		Mode: uint32(sx.Mode), Uid: sx.Uid, Gid: sx.Gid,
		Rdev: unix.Mkdev(sx.Rdev_major, sx.Rdev_minor), Size: int64(sx.Size),
		Blksize: int64(sx.Blksize), Blocks: int64(sx.Blocks),
		Atim: unix.Timespec{Sec: sx.Atime.Sec, Nsec: int64(sx.Atime.Nsec)},
		Mtim: unix.Timespec{Sec: sx.Mtime.Sec, Nsec: int64(sx.Mtime.Nsec)},
		Ctim: unix.Timespec{Sec: sx.Ctime.Sec, Nsec: int64(sx.Ctime.Nsec)},
	}
	gen := uint64(1)
	if sx.Mask&unix.STATX_BTIME != 0 && (sx.Btime.Sec != 0 || sx.Btime.Nsec != 0) {
		gen = uint64(sx.Btime.Sec)*1e9 + uint64(sx.Btime.Nsec)
	}
	return st, gen, nil
}
