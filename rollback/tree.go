package rollback

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
