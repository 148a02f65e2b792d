package hook

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// The settings file is in the workspace, whose content the agent
// controls, and `cowfs integrate` often runs as root. So it is reached
// only through descriptors beneath the workspace, never following a
// link: an agent that made .claude a symlink to /etc, or settings.json
// one to a file of root's, gets a refusal, not a root-owned write
// outside the workspace.

// beneath resolves names beneath the directory it is given, refusing
// symlinks, magic links and ".." out of it.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens name beneath dir with flags.
func openBeneath(dir int, name string, flags uint64, mode uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dir, name, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: mode, Resolve: beneath})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err == unix.ELOOP || err == unix.EXDEV {
			return -1, fmt.Errorf("%s is a symbolic link or leads out of the workspace: %w", name, err)
		}
		return fd, err
	}
}

// settingsDir opens the workspace ws and the settings directory in it,
// making the directory if make is set; dir is -1 if it does not exist.
func (s Settings) settingsDir(ws string, make bool) (root, dir int, err error) {
	root, err = unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, &os.PathError{Op: "open", Path: ws, Err: err}
	}
	dir, err = openBeneath(root, s.Dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if errors.Is(err, unix.ENOENT) && make {
		if err = unix.Mkdirat(root, s.Dir, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
			dir, err = openBeneath(root, s.Dir, unix.O_PATH|unix.O_DIRECTORY, 0)
		}
	}
	if errors.Is(err, unix.ENOENT) {
		return root, -1, nil
	}
	if err != nil {
		unix.Close(root)
		return -1, -1, fmt.Errorf("%s: %w", s.Path(ws), err)
	}
	return root, dir, nil
}

// Read reads the settings file of the project at ws; nil if there is
// none.
func (s Settings) Read(ws string) ([]byte, error) {
	root, dir, err := s.settingsDir(ws, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	if dir < 0 {
		return nil, nil
	}
	defer unix.Close(dir)
	fd, err := openBeneath(dir, "settings.json", unix.O_RDONLY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path(ws), err)
	}
	f := os.NewFile(uintptr(fd), s.Path(ws))
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", s.Path(ws))
	}
	return io.ReadAll(io.LimitReader(f, maxHookInput))
}

// Write replaces the settings file of the project at ws with b, through
// a temporary file renamed over it, so the CLI never reads half a file;
// its directory is made if missing. An empty object removes the file
// (and its directory, if that leaves it empty): cowfs made them.
func (s Settings) Write(ws string, b []byte) error {
	empty := string(bytes.TrimSpace(b)) == "{}"
	root, dir, err := s.settingsDir(ws, !empty)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	if dir < 0 {
		return nil // empty, and nothing there
	}
	defer unix.Close(dir)
	if empty {
		if err := unix.Unlinkat(dir, "settings.json", 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", s.Path(ws), err)
		}
		unix.Unlinkat(root, s.Dir, unix.AT_REMOVEDIR) // only if empty
		return nil
	}
	mode := uint32(0o644)
	var st unix.Stat_t
	if unix.Fstatat(dir, "settings.json", &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		mode = st.Mode & 0o777
	}
	var r [6]byte
	rand.Read(r[:])
	tmp := ".settings.json.cowfs" + hex.EncodeToString(r[:])
	fd, err := openBeneath(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint64(mode))
	if err != nil {
		return fmt.Errorf("%s: %w", s.Path(ws), err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(os.FileMode(mode))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, "settings.json")
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return fmt.Errorf("%s: %w", s.Path(ws), err)
	}
	return nil
}
