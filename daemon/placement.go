package daemon

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrPlacement: the workspace, mountpoint, journal or state directory
// are where cowfs must not put them. Nothing was mounted or written.
var ErrPlacement = errors.New("refused")

// systemDirs are directories a workspace must never be: mounting over
// one would hide the system's own files from every process.
var systemDirs = map[string]bool{
	"/": true, "/bin": true, "/boot": true, "/dev": true, "/etc": true,
	"/lib": true, "/lib32": true, "/lib64": true, "/libx32": true,
	"/proc": true, "/run": true, "/sbin": true, "/sys": true, "/tmp": true,
	"/usr": true, "/var": true, "/var/tmp": true,
}

// CheckPlacement makes Start's checks of where the workspace, the
// mountpoint and the state are, and nothing else: for a command that
// must refuse before it writes anything (a background daemon's log).
func CheckPlacement(opts Options) error {
	ws, err := canonical(opts.Workspace)
	if err != nil {
		return err
	}
	mnt := ws
	if opts.Mountpoint != "" {
		if mnt, err = canonical(opts.Mountpoint); err != nil {
			return err
		}
	}
	loc, err := Locate(ws)
	if err != nil {
		return err
	}
	return checkPlacement(ws, mnt, loc.Dir, journalDir(opts, loc))
}

// journalDir is where the journal of the workspace at loc goes.
func journalDir(opts Options, loc Location) string {
	if opts.JournalDir != "" {
		return resolved(opts.JournalDir)
	}
	return resolved(loc.Journal())
}

// checkPlacement refuses what would let the workspace's contents reach
// cowfs's own state, or bury the system under a mount: a workspace or
// mountpoint that is a system directory, and a journal or state
// directory inside the workspace or the mountpoint, or holding them. A
// journal the agent can reach, it can delete — and with it every
// rollback — and the journal's records would journal themselves.
// Paths are compared with symlinks resolved as far as they exist.
func checkPlacement(ws, mnt, stateDir, journalDir string) error {
	for _, p := range []struct{ what, path string }{{"workspace", ws}, {"mountpoint", mnt}} {
		if systemDirs[p.path] {
			return fmt.Errorf("%w: %s %s is a system directory; cowfs mounts over a project's workspace, never over %s", ErrPlacement, p.what, p.path, p.path)
		}
	}
	state := []struct{ what, path string }{
		{"the state directory", resolved(stateDir)},
		{"the journal", resolved(journalDir)},
		{"the state root (COWFS_STATE_DIR)", resolved(StateRoot())},
	}
	for _, top := range []struct{ what, path string }{{"workspace", ws}, {"mountpoint", mnt}} {
		for _, s := range state {
			switch {
			case within(top.path, s.path):
				return fmt.Errorf("%w: %s %s lies inside the %s %s, where what runs in the workspace could change or delete it; put it outside (--journal, COWFS_STATE_DIR)", ErrPlacement, s.what, s.path, top.what, top.path)
			case within(s.path, top.path):
				return fmt.Errorf("%w: the %s %s lies inside %s %s; choose a workspace outside cowfs's state", ErrPlacement, top.what, top.path, s.what, s.path)
			}
		}
	}
	return nil
}

// within reports whether path p is dir or beneath it.
func within(dir, p string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// resolved returns p absolute, with the symlinks of its longest
// existing prefix resolved: where p is, or will be once made.
func resolved(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == "/" {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}
