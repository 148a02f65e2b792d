package backing

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Tree is the backing directory. Every path given to it is relative to
// its root and resolved beneath it without following any symlink, so
// nothing outside the workspace is ever read, written or deleted
// through it.
type Tree struct {
	fd int // O_PATH descriptor of the root
}

// ErrEscapes: a path names something outside the workspace.
var ErrEscapes = errors.New("path leaves the workspace")

// NewTree wraps fd, an O_PATH descriptor of the backing root that the
// caller keeps open.
func NewTree(fd int) *Tree { return &Tree{fd: fd} }

// CleanPath checks that p is a relative path that stays beneath the
// root and returns it in canonical form ("" for the root itself).
func CleanPath(p string) (string, error) {
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: %q is absolute", ErrEscapes, p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q", ErrEscapes, p)
	}
	if c == "." {
		return "", nil
	}
	return c, nil
}

const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Open opens rel with flags (O_NOFOLLOW is implied: a final symlink is
// refused with ELOOP).
func (t *Tree) Open(rel string, flags int, mode uint32) (*os.File, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return nil, err
	}
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Mode: uint64(mode), Resolve: beneath}
	fd, err := unix.Openat2(t.fd, rel, &how)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// Lstat stats rel without following it if it is a symlink.
func (t *Tree) Lstat(rel string) (*unix.Stat_t, error) {
	if c, err := CleanPath(rel); err == nil && c == "" {
		var st unix.Stat_t
		if err := unix.Fstat(t.fd, &st); err != nil {
			return nil, &os.PathError{Op: "lstat", Path: ".", Err: err}
		}
		return &st, nil
	}
	dir, name, err := t.parent(rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return &st, nil
}

// Readlink returns the target of the symlink rel.
func (t *Tree) Readlink(rel string) (string, error) {
	dir, name, err := t.parent(rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(dir)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: rel, Err: err}
	}
	return string(buf[:n]), nil
}

// parent opens the directory holding rel (beneath the root) and returns
// it with rel's last component.
func (t *Tree) parent(rel string) (int, string, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return -1, "", err
	}
	if rel == "" {
		return -1, "", fmt.Errorf("%w: the root has no parent", ErrEscapes)
	}
	dir, name := path.Split(rel)
	if dir == "" {
		dir = "."
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath}
	fd, err := unix.Openat2(t.fd, dir, &how)
	if err != nil {
		return -1, "", &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, name, nil
}

// Rename renames from to to (both relative to the root) with renameat2
// flags, resolving both parents beneath the root.
func (t *Tree) Rename(from, to string, flags uint) error {
	d1, n1, err := t.parent(from)
	if err != nil {
		return err
	}
	defer unix.Close(d1)
	d2, n2, err := t.parent(to)
	if err != nil {
		return err
	}
	defer unix.Close(d2)
	if err := unix.Renameat2(d1, n1, d2, n2, flags); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// Empty reports whether the directory rel has no entries.
func (t *Tree) Empty(rel string) (bool, error) {
	f, err := t.Open(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) == 0 {
		return true, nil
	}
	return false, err
}

// Walk calls fn with the path (relative to rel) and stat of every entry
// beneath the directory rel, not rel itself, depth first. Each directory
// is opened relative to the one holding it, with O_NOFOLLOW, so the walk
// never leaves rel. An error from fn stops the walk and is returned.
func (t *Tree) Walk(rel string, fn func(sub string, st *unix.Stat_t) error) error {
	f, err := t.Open(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return walkDir(f, "", fn)
}

func walkDir(dir *os.File, prefix string, fn func(sub string, st *unix.Stat_t) error) error {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return err
	}
	dfd := int(dir.Fd())
	for _, name := range names {
		sub := prefix + name
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "stat", Path: sub, Err: err}
		}
		if err := fn(sub, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: sub, Err: err}
		}
		d := os.NewFile(uintptr(fd), sub)
		err = walkDir(d, sub+"/", fn)
		d.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// SetAttr puts back the owner, mode and times of rel (a symlink keeps
// its mode: Linux has none to set). Owner goes first: chown clears
// set-id bits that the mode then restores.
func (t *Tree) SetAttr(rel string, mode, uid, gid uint32, atime, mtime int64, symlink bool) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime), unix.NsecToTimespec(mtime)}
	if rel == "" {
		rel = "."
	}
	if symlink {
		dir, name, err := t.parent(rel)
		if err != nil {
			return err
		}
		defer unix.Close(dir)
		if err := unix.Fchownat(dir, name, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "lchown", Path: rel, Err: err}
		}
		if err := unix.UtimesNanoAt(dir, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "utimes", Path: rel, Err: err}
		}
		return nil
	}
	f, err := t.Open(rel, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// An O_PATH descriptor cannot be fchmod'ed; its /proc/self/fd link
	// names exactly the inode opened beneath the root.
	p := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if err := unix.Chown(p, int(uid), int(gid)); err != nil {
		return &os.PathError{Op: "chown", Path: rel, Err: err}
	}
	if err := unix.Chmod(p, mode&07777); err != nil {
		return &os.PathError{Op: "chmod", Path: rel, Err: err}
	}
	if err := unix.UtimesNano(p, ts); err != nil {
		return &os.PathError{Op: "utimes", Path: rel, Err: err}
	}
	return nil
}

// Getxattr returns the value of xattr name of rel, and whether it has
// one.
func (t *Tree) Getxattr(rel, name string) ([]byte, bool, error) {
	p, closeFn, err := t.procPath(rel)
	if err != nil {
		return nil, false, err
	}
	defer closeFn()
	for size := 256; ; {
		buf := make([]byte, size)
		n, err := unix.Lgetxattr(p, name, buf)
		switch {
		case errors.Is(err, unix.ENODATA):
			return nil, false, nil
		case errors.Is(err, unix.ERANGE):
			if size, err = unix.Lgetxattr(p, name, nil); err != nil {
				return nil, false, &os.PathError{Op: "getxattr", Path: rel, Err: err}
			}
			continue
		case err != nil:
			return nil, false, &os.PathError{Op: "getxattr", Path: rel, Err: err}
		}
		return buf[:n], true, nil
	}
}

// Setxattr sets xattr name of rel to value, or removes it if !exists.
func (t *Tree) Setxattr(rel, name string, value []byte, exists bool) error {
	p, closeFn, err := t.procPath(rel)
	if err != nil {
		return err
	}
	defer closeFn()
	if exists {
		err = unix.Lsetxattr(p, name, value, 0)
	} else if err = unix.Lremovexattr(p, name); errors.Is(err, unix.ENODATA) {
		err = nil
	}
	if err != nil {
		return &os.PathError{Op: "setxattr", Path: rel, Err: err}
	}
	return nil
}

// procPath returns a path that names rel's inode without resolving any
// user-controlled component again: /proc/self/fd/N/NAME, where N is
// rel's parent opened beneath the root. The final component is not
// followed by the l*xattr calls that use it.
func (t *Tree) procPath(rel string) (string, func(), error) {
	if c, err := CleanPath(rel); err != nil {
		return "", nil, err
	} else if c == "" {
		f, err := t.Open("", unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("/proc/self/fd/%d", f.Fd()), func() { f.Close() }, nil
	}
	dir, name, err := t.parent(rel)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", dir, name), func() { unix.Close(dir) }, nil
}
