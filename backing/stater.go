package backing

import (
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Stater lstats many paths beneath a Tree's root for a reader that
// changes nothing, keeping the directories of the paths open (up to
// staterDirs of them): a rollback's planner stats every path a turn
// created (25,000 for an unpacked tree and its git repository, whose
// objects spread over 256 directories), and resolving each path whole
// from the root (openat2, fstat, close) cost three times one fstatat
// beside its siblings. Each directory is resolved beneath the root like
// any path (openBeneath); the name in it is a single component, never
// followed. A directory moved after it was opened is stat'ed where it is
// now: a Stater serves one reading of the tree, made while nothing
// through the mount can change it.
type Stater struct {
	t    *Tree
	dirs map[string]int // open directories, relative to the root
}

// staterDirs bounds the directories a Stater keeps open.
const staterDirs = 256

// NewStater returns a Stater of t, which the caller closes.
func (t *Tree) NewStater() *Stater { return &Stater{t: t, dirs: map[string]int{}} }

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
	fd, err := s.dir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return &st, nil
}

// Dir returns an O_PATH descriptor of directory rel (clean; "" is the
// root), resolved beneath the root like any path and never through a
// symlink. It stays the Stater's: valid until the next call to Lstat or
// Dir, or Close.
func (s *Stater) Dir(rel string) (int, error) {
	fd, err := s.dir(rel)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

func (s *Stater) dir(dir string) (int, error) {
	if dir == "" {
		dir = "."
	}
	if fd, ok := s.dirs[dir]; ok {
		return fd, nil
	}
	if len(s.dirs) >= staterDirs {
		s.Close()
	}
	fd, err := openBeneath(s.t.fd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, err
	}
	s.dirs[dir] = fd
	return fd, nil
}

// Close closes the directories the Stater holds open.
func (s *Stater) Close() {
	for dir, fd := range s.dirs {
		unix.Close(fd)
		delete(s.dirs, dir)
	}
}
