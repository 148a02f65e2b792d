package backing

import (
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Stater lstats many paths beneath a Tree's root for a reader that
// changes nothing, keeping the directory of the last path open: a
// rollback's planner stats every path a turn created (25,000 for an
// unpacked tree and its git repository), mostly a directory at a time,
// and resolving each path whole from the root (openat2, fstat, close)
// cost three times one fstatat beside its siblings. The directory is
// resolved beneath the root like any path (openBeneath); the name in
// it is a single component, never followed. A directory moved after it
// was opened is stat'ed where it is now: a Stater serves one reading of
// the tree, made while nothing through the mount can change it.
type Stater struct {
	t   *Tree
	dir string // the open directory, relative to the root
	fd  int    // -1 if none is open
}

// NewStater returns a Stater of t, which the caller closes.
func (t *Tree) NewStater() *Stater { return &Stater{t: t, fd: -1} }

// Lstat stats rel without following it if it is a symlink.
func (s *Stater) Lstat(rel string) (*unix.Stat_t, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return nil, err
	}
	if rel == "" {
		return s.t.Lstat(rel)
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if s.fd < 0 || dir != s.dir {
		s.Close()
		fd, err := openBeneath(s.t.fd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
		}
		s.dir, s.fd = dir, fd
	}
	var st unix.Stat_t
	if err := unix.Fstatat(s.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return &st, nil
}

// Close closes the directory the Stater holds open, if any.
func (s *Stater) Close() {
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}
