package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cowfs/cowfs/privdir"
)

// StateRoot is where per-workspace state directories live:
// $COWFS_STATE_DIR if set; /var/lib/cowfs for root; else
// $XDG_STATE_HOME/cowfs, or ~/.local/state/cowfs.
func StateRoot() string {
	if d := os.Getenv("COWFS_STATE_DIR"); d != "" {
		return d
	}
	if os.Getuid() == 0 {
		return "/var/lib/cowfs"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "cowfs")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "cowfs")
}

// Location is where one workspace's state lives.
type Location struct {
	Workspace string // absolute path, symlinks resolved
	Dir       string // its state directory
}

func (l Location) Journal() string { return filepath.Join(l.Dir, "journal") }
func (l Location) Log() string     { return filepath.Join(l.Dir, "daemon.log") }

// SocketDirEnv names a directory for the control sockets apart from the
// state: a container keeps its state on a volume and shares only this
// directory with the host, where a harness drives turns and rollbacks.
const SocketDirEnv = "COWFS_SOCKET_DIR"

// Socket is the control socket's path: ctl.sock in the state directory,
// or NAME-HASH.sock in $COWFS_SOCKET_DIR.
func (l Location) Socket() string {
	if d := os.Getenv(SocketDirEnv); d != "" {
		return filepath.Join(d, filepath.Base(l.Dir)+".sock")
	}
	return filepath.Join(l.Dir, "ctl.sock")
}

// ErrUnsafeDir: a state or socket directory, or one above it, is one
// another user could change (privdir.ErrUnsafe, re-exported for the CLI).
var ErrUnsafeDir = privdir.ErrUnsafe

// makeStateDirs creates l's state directory and its socket's directory,
// or checks them if they exist: only root and the daemon's uid may be
// able to change them or any directory above them (privdir), or the
// daemon, running as root, would create its journal, its log and its
// socket where another user could redirect, read or replace them. The
// socket's directory is checked again, by descriptor, when the socket
// is bound (ctl.Listen); checking it here refuses before anything is
// opened or mounted.
func makeStateDirs(l Location) error {
	if err := privdir.Make(l.Dir); err != nil {
		return fmt.Errorf("state directory %s: %w", l.Dir, err)
	}
	if sd := filepath.Dir(l.Socket()); sd != l.Dir {
		if err := privdir.Make(sd); err != nil {
			return fmt.Errorf("control socket directory %s: %w", sd, err)
		}
	}
	return nil
}

// maxSocketPath is what fits in sockaddr_un.sun_path.
const maxSocketPath = 107

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Locate returns the location of the workspace at path.
func Locate(path string) (Location, error) {
	abs, err := canonical(path)
	if err != nil {
		return Location{}, err
	}
	sum := sha256.Sum256([]byte(abs))
	name := unsafeChars.ReplaceAllString(filepath.Base(abs), "_")
	if len(name) > 32 {
		name = name[:32]
	}
	l := Location{Workspace: abs, Dir: filepath.Join(StateRoot(), name+"-"+hex.EncodeToString(sum[:6]))}
	if len(l.Socket()) > maxSocketPath {
		return l, fmt.Errorf("state directory %s is too deep for a Unix socket path; set COWFS_STATE_DIR to a shorter one", l.Dir)
	}
	return l, nil
}

// ErrEmptyPath: a workspace was named by the empty string. Made
// absolute, it would be the current directory, which nobody who passed
// an empty variable meant.
var ErrEmptyPath = errors.New("an empty path names no workspace")

// canonical returns path absolute with symlinks resolved. The last
// component is kept as it is if it cannot be resolved (a stale mount
// answers ENOTCONN), or if it is a mount point: that is no symlink (the
// kernel resolved any when it mounted), and looking at it would ask the
// filesystem mounted there — a FUSE daemon that hangs would never
// answer, and the command meant to cut it off (umount --force) would
// hang with it. An empty path is refused (ErrEmptyPath).
func canonical(path string) (string, error) {
	if path == "" {
		return "", ErrEmptyPath
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		if p := filepath.Join(dir, filepath.Base(abs)); isMountPoint(p) {
			return p, nil
		}
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", path, err)
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// Find returns the location of the workspace that contains path: path
// itself or the nearest parent with a daemon's socket. If none has one,
// it returns path's own location.
func Find(path string) (Location, error) {
	own, err := Locate(path)
	if err != nil {
		return own, err
	}
	for p := own.Workspace; ; p = filepath.Dir(p) {
		l, err := Locate(p)
		if err == nil {
			if _, err := os.Stat(l.Socket()); err == nil {
				return l, nil
			} else if !errors.Is(err, os.ErrNotExist) {
				return l, err
			}
		}
		if p == "/" {
			return own, nil
		}
	}
}

// journalRecord names the file in a state directory that says where
// the workspace's journal is, so commands that open it without a
// daemon (OpenOffline) find a journal --journal moved.
const journalRecord = "journal.dir"

// recordJournal notes in the state directory where the journal is. It
// is written to a temporary file and renamed, so a reader sees the old
// record or the new one, never a part.
func recordJournal(loc Location, jdir string) error {
	p := filepath.Join(loc.Dir, journalRecord)
	if b, err := os.ReadFile(p); err == nil && string(b) == jdir+"\n" {
		return nil
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(jdir+"\n"), 0o600); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("state directory: %w", err)
	}
	return nil
}

// recordedJournal returns where the journal of the workspace at loc is,
// and whether it has one at all: the recorded place, else the default
// one if a journal is there.
func recordedJournal(loc Location) (string, bool) {
	p := loc.Journal()
	if b, err := os.ReadFile(filepath.Join(loc.Dir, journalRecord)); err == nil {
		if r := strings.TrimSuffix(string(b), "\n"); filepath.IsAbs(r) {
			p = r
		}
	}
	fi, err := os.Stat(p)
	return p, err == nil && fi.IsDir()
}
