package backing

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Tree is the backing directory, addressed by paths relative to its
// root. Every path is resolved beneath the root without following any
// symlink, so nothing outside the workspace is ever read, written or
// deleted through it.
type Tree struct {
	fd int // O_PATH descriptor of the root
}

// Errors a path given to a Tree can fail with before anything is
// resolved.
var (
	// ErrEscapes: a path names something outside the workspace.
	ErrEscapes = errors.New("path leaves the workspace")
	// ErrBadPath: a path no filesystem can hold (a NUL byte).
	ErrBadPath = errors.New("invalid path")
)

// NewTree wraps fd, an O_PATH descriptor of the backing root that the
// caller keeps open.
func NewTree(fd int) *Tree { return &Tree{fd: fd} }

// Root returns the descriptor of the root.
func (t *Tree) Root() int { return t.fd }

// CleanPath checks that p is a relative path that stays beneath the
// root and returns it in canonical form ("" for the root itself).
func CleanPath(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: %q holds a NUL byte", ErrBadPath, p)
	}
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

// maxResolve bounds the path handed to one openat2: the kernel refuses
// paths of PATH_MAX bytes or more, but a directory tree may be deeper
// than that (every FUSE request names one component).
const maxResolve = unix.PathMax - 256

// openBeneath opens rel (clean, not empty) beneath directory dir with
// flags, following no symlink. A path too long for one openat2 is
// resolved in pieces, each beneath the directory the previous opened.
func openBeneath(dir int, rel string, flags int, mode uint32) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	start, owned := dir, false
	for len(rel) > maxResolve {
		cut := strings.LastIndexByte(rel[:maxResolve], '/')
		if cut <= 0 {
			return -1, unix.ENAMETOOLONG
		}
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath}
		fd, err := unix.Openat2(start, rel[:cut], &how)
		if owned {
			unix.Close(start)
		}
		if err != nil {
			return -1, err
		}
		start, owned, rel = fd, true, rel[cut+1:]
	}
	how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: beneath}
	fd, err := unix.Openat2(start, rel, &how)
	if owned {
		unix.Close(start)
	}
	return fd, err
}

// OpenFd opens rel with flags and returns the raw descriptor (O_NOFOLLOW
// is implied: a final symlink is refused with ELOOP unless flags has
// O_PATH, which then opens the symlink itself).
func (t *Tree) OpenFd(rel string, flags int, mode uint32) (int, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return -1, err
	}
	if rel == "" {
		rel = "."
	}
	fd, err := openBeneath(t.fd, rel, flags, mode)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

// Open is OpenFd wrapped in an *os.File.
func (t *Tree) Open(rel string, flags int, mode uint32) (*os.File, error) {
	fd, err := t.OpenFd(rel, flags, mode)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// Lstat stats rel without following it if it is a symlink.
func (t *Tree) Lstat(rel string) (*unix.Stat_t, error) {
	fd, err := t.OpenFd(rel, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	st, err := Fstat(fd)
	if err != nil {
		return nil, &os.PathError{Op: "lstat", Path: rel, Err: errors.Unwrap(err)}
	}
	return st, nil
}

// Readlink returns the target of the symlink rel.
func (t *Tree) Readlink(rel string) (string, error) {
	fd, err := t.OpenFd(rel, unix.O_PATH, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return Readlink(fd)
}

// Parent opens the directory holding rel (beneath the root) as an
// O_PATH descriptor, which the caller closes, and returns it with rel's
// last component: for *at calls that must not follow that component.
func (t *Tree) Parent(rel string) (int, string, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return -1, "", err
	}
	if rel == "" {
		return -1, "", fmt.Errorf("%w: the root has no parent", ErrEscapes)
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	fd, err := openBeneath(t.fd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, name, nil
}

// EmptyDir reports whether the open directory f has no entries.
func EmptyDir(f *os.File) (bool, error) {
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
	return WalkDir(f, fn)
}

// WalkDir is Walk beneath the open directory dir.
func WalkDir(dir *os.File, fn func(sub string, st *unix.Stat_t) error) error {
	return walkDir(dir, "", fn)
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
