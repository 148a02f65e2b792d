package daemon

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// ErrPlacement: the workspace, mountpoint, journal or state directory
// are where cowfs must not put them. Nothing was mounted or written.
var ErrPlacement = errors.New("refused")

// systemDirs are directories a workspace or mountpoint must never be:
// mounting over one would hide the system's files, or other mounts, from
// every process, and a daemon that then dies leaves them all answering
// ENOTCONN. Compared after symlinks are resolved, so the list is checked
// resolved too (systemDir): on a merged-/usr system /lib is /usr/lib.
var systemDirs = map[string]bool{
	"/": true, "/bin": true, "/boot": true, "/dev": true, "/etc": true,
	"/home": true, "/lib": true, "/lib32": true, "/lib64": true, "/libx32": true,
	"/lost+found": true, "/media": true, "/mnt": true, "/nix": true, "/opt": true,
	"/proc": true, "/root": true, "/run": true, "/sbin": true, "/snap": true,
	"/srv": true, "/sys": true, "/tmp": true,
	"/usr": true, "/usr/bin": true, "/usr/include": true, "/usr/lib": true,
	"/usr/lib32": true, "/usr/lib64": true, "/usr/libexec": true, "/usr/local": true,
	"/usr/local/bin": true, "/usr/local/lib": true, "/usr/local/sbin": true,
	"/usr/sbin": true, "/usr/share": true, "/usr/src": true,
	"/var": true, "/var/cache": true, "/var/lib": true, "/var/local": true,
	"/var/lock": true, "/var/log": true, "/var/mail": true, "/var/opt": true,
	"/var/run": true, "/var/spool": true, "/var/tmp": true,
}

// kernelDirs hold the kernel's and devices' own filesystems: nothing
// beneath them is a workspace, and the daemon itself needs /proc (who
// made a change) and /dev/fuse.
var kernelDirs = []string{"/proc", "/sys", "/dev"}

// resolvedSystemDirs is systemDirs with each entry's symlinks resolved.
var resolvedSystemDirs = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for d := range systemDirs {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			m[r] = true
		}
	}
	return m
})

// systemDir reports whether the canonical path p is a system directory
// or lies beneath a kernel filesystem.
func systemDir(p string) bool {
	if systemDirs[p] || resolvedSystemDirs()[p] {
		return true
	}
	for _, k := range kernelDirs {
		if within(k, p) {
			return true
		}
	}
	return false
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
		if systemDir(p.path) {
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
