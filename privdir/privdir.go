// Package privdir opens and creates the directories cowfs keeps its
// control socket and its state in, such that nobody but the process's
// own uid and root can change what they hold.
//
// The daemon runs as root, and where these directories are comes from
// the environment (COWFS_STATE_DIR, COWFS_SOCKET_DIR, $XDG_STATE_HOME).
// If another user controlled such a path — a directory of theirs, a
// symlink they planted, a directory they created first under /tmp —
// they could point root's mkdir and chmod at a directory of their
// choice, or put a socket of their own where the CLI looks for the
// daemon's and receive its requests. So a directory is never reached by
// a path the kernel resolves: Create and Open walk from / one component
// at a time with openat(O_PATH|O_NOFOLLOW), creating what is missing
// with mkdirat, and check each component on its descriptor.
//
// # The rule
//
// Every component must be a real directory (a symlink is refused, even
// one of root's: following it would make the check depend on another
// path) owned by root or by the process's uid. The directory itself
// must be the process's own. None may be writable by group or others,
// with one exception: a sticky directory such as /tmp, where anybody
// may create names, is fine above the directory. In a sticky directory
// only an entry's owner, the directory's owner and root may rename or
// remove the entry (unlink(2), rename(2): EPERM otherwise), and every
// component below it must itself be owned by root or the process's uid,
// so nobody else can remove or replace it; a name somebody else
// created there first is theirs, and refused. Group write counts as
// foreign too: a POSIX ACL that grants anyone else write shows in the
// group bits (its mask).
//
// The checks hold for as long as the directories stay as checked, and
// only root and the process's uid could change them: once Create
// returns, paths beneath the directory name what the descriptor does.
//
// Imports: x/sys/unix and the standard library only.
package privdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafe: a directory, or one above it, is one another user could
// change. Errors that wrap it are *UnsafeError.
var ErrUnsafe = errors.New("refused: a directory another user could change")

// UnsafeError says which component broke the rule, and how.
type UnsafeError struct {
	Dir       string // the directory asked for
	Component string // the component that broke the rule
	Reason    string // e.g. "is a symlink"
	Uid       int    // the process's uid
}

func (e *UnsafeError) Error() string {
	who := "root or uid " + strconv.Itoa(e.Uid)
	if e.Uid == 0 {
		who = "root"
	}
	return fmt.Sprintf("refused: %s %s; cowfs keeps its control socket and state only in a directory reached without symlinks, "+
		"each directory on the way owned by %s and writable by nobody else (a sticky one such as /tmp excepted)",
		e.Component, e.Reason, who)
}

// Is makes errors.Is(err, ErrUnsafe) true.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

// Dir is an open directory that passed the checks.
type Dir struct {
	fd   int // O_PATH descriptor
	path string
}

// Create opens the directory at path, creating it and any missing
// parent with mode 0700 (as os.MkdirAll would, but by descriptor), and
// refuses it if it or a component breaks the package's rule.
func Create(path string) (*Dir, error) { return walk(path, true) }

// Open opens the existing directory at path, refusing it as Create
// does.
func Open(path string) (*Dir, error) { return walk(path, false) }

// Make is Create for a caller that needs no descriptor.
func Make(path string) error {
	d, err := Create(path)
	if err != nil {
		return err
	}
	return d.Close()
}

func walk(path string, create bool) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	uid := os.Geteuid()
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", abs, err)
	}
	names := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	if abs == "/" {
		names = nil
	}
	sofar := "/"
	if err := check(fd, abs, sofar, len(names) == 0, uid); err != nil {
		unix.Close(fd)
		return nil, err
	}
	for i, name := range names {
		sofar = filepath.Join(sofar, name)
		next, err := openChild(fd, name, create)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sofar, err)
		}
		fd = next
		if err := check(fd, abs, sofar, i == len(names)-1, uid); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return &Dir{fd: fd, path: abs}, nil
}

// openChild opens name in the directory parent without following it,
// creating it (0700) if it is missing and create is set.
func openChild(parent int, name string, create bool) (int, error) {
	for {
		// No O_DIRECTORY: a symlink is opened as itself, so check can
		// say what it is.
		fd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil || !errors.Is(err, unix.ENOENT) || !create {
			return fd, err
		}
		if err := unix.Mkdirat(parent, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
	}
}

// check applies the package's rule to the component at fd, named
// component; last says it is the directory asked for.
func check(fd int, dir, component string, last bool, uid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", component, err)
	}
	fail := func(format string, a ...any) error {
		return &UnsafeError{Dir: dir, Component: component, Reason: fmt.Sprintf(format, a...), Uid: uid}
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fail("is a symlink")
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fail("is not a directory")
	case int(st.Uid) != 0 && int(st.Uid) != uid:
		return fail("is owned by uid %d", st.Uid)
	case last && int(st.Uid) != uid:
		return fail("is owned by uid %d, not by this process's uid %d", st.Uid, uid)
	case st.Mode&0o022 != 0 && (last || st.Mode&unix.S_ISVTX == 0):
		return fail("is writable by its group or by others (mode %04o)", st.Mode&0o7777)
	}
	return nil
}

// Close closes the directory's descriptor.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Path is the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// Beneath returns a path that names name in d through d's descriptor
// (/proc/self/fd/N/name), for the calls that take only a path — bind
// and connect on a Unix socket — and must not resolve d's path again.
func (d *Dir) Beneath(name string) string {
	return "/proc/self/fd/" + strconv.Itoa(d.fd) + "/" + name
}

// Chmod sets d's own mode.
func (d *Dir) Chmod(mode os.FileMode) error {
	if err := os.Chmod("/proc/self/fd/"+strconv.Itoa(d.fd), mode); err != nil {
		return fmt.Errorf("%s: %w", d.path, err)
	}
	return nil
}

// ChmodSocket sets the mode of the Unix socket name in d, through a
// descriptor of its inode: a name that is not a socket (or a symlink)
// is left alone.
func (d *Dir) ChmodSocket(name string, mode os.FileMode) error {
	fd, err := unix.Openat(d.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(d.path, name), err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(d.path, name), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("%s: not a socket", filepath.Join(d.path, name))
	}
	// An O_PATH descriptor has no fchmod; chmod through its
	// /proc/self/fd link acts on the inode it holds.
	if err := os.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// Lstat returns what name in d is, without following it.
func (d *Dir) Lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// Rename renames from to to within d, replacing what to names.
func (d *Dir) Rename(from, to string) error {
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(d.path, to), err)
	}
	return nil
}

// Remove removes name (not a directory) from d.
func (d *Dir) Remove(name string) error { return unix.Unlinkat(d.fd, name, 0) }
