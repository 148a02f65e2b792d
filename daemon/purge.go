package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
	"github.com/cowfs/cowfs/journal"
)

// ErrServed: a daemon serves the workspace (or its mount is still
// there), so its journal and private area are in use.
var ErrServed = errors.New("a cowfs daemon serves the workspace")

// PurgeResult lists what Purge removed.
type PurgeResult struct {
	Removed []string `json:"removed"` // paths removed, in order
}

// Purge removes everything cowfs keeps for the workspace ws: its
// private directory in the workspace (the aside area, with the inodes
// kept there), its journal (journalDir, or the default one in the
// state directory) and its state directory. Every rollback of the
// workspace is gone afterwards; its files are left as they are.
//
// It refuses with ErrServed while a daemon answers for the workspace,
// while the workspace is a cowfs mount, or while the journal is locked
// (a daemon starting or stopping); the journal stays locked by Purge
// until it is removed, so no daemon can start meanwhile.
//
// Order, for a purge cut short (a crash, a failure): the private
// directory goes first, while the journal that names it still proves it
// is cowfs's; then the journal; then the state directory. Running Purge
// again finishes the job. Nothing is followed on the way: each
// directory is removed through descriptors of its parent
// (backing.RemoveAll), so a link planted anywhere removes the link,
// never what it points to.
func Purge(ws, journalDir string) (PurgeResult, error) {
	loc, err := Locate(ws)
	if err != nil {
		return PurgeResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if st, err := ctl.NewClient(loc.Socket()).Status(ctx); err == nil {
		return PurgeResult{}, served(loc.Workspace, st.Pid)
	}
	if m, ok := mountAt(loc.Workspace); ok && m.FSType == "fuse.cowfs" {
		return PurgeResult{}, fmt.Errorf("%w: %s is still a cowfs mount; unmount it first: %s", ErrServed, loc.Workspace, UmountCommand(loc.Workspace))
	}
	return purgeStopped(loc, journalDir)
}

// purgeStopped is Purge once nothing serves the workspace any more.
//
// With no journalDir, the journal is where the state directory records
// it (journal.dir, written by every daemon that opened it), so that one
// --journal put elsewhere goes too. A record is a path another process
// wrote, though, and what is there now may be no journal: a recorded
// directory is removed only if it holds a journal's lock file, the mark
// of journal.Open. One without (a journal removed and something else
// put there, or a purge cut short) is left alone and named, for
// --journal to remove it if it is to go.
func purgeStopped(loc Location, journalDir string) (PurgeResult, error) {
	var res PurgeResult
	jdir := journalDir
	if jdir == "" {
		recorded, _ := recordedJournal(loc)
		if recorded = resolved(recorded); recorded != resolved(loc.Journal()) {
			if err := checkRecordedJournal(loc, recorded); err != nil {
				return res, err
			}
		}
		jdir = recorded
	}
	jdir = resolved(jdir)

	// The journal names the private directory that is its own (its
	// binding token), and opening it takes its lock.
	token := ""
	if _, err := os.Stat(filepath.Join(jdir, "lock")); err == nil {
		j, err := journal.Open(jdir, journal.Options{})
		if errors.Is(err, journal.ErrLocked) {
			return res, fmt.Errorf("%w: %v", ErrServed, err)
		}
		if err != nil {
			return res, fmt.Errorf("open the journal to purge it (remove %s by hand if it is beyond repair): %w", jdir, err)
		}
		token, err = j.Binding()
		j.Close()
		if err != nil {
			return res, err
		}
	}
	// Hold the journal's lock from here on: no daemon starts on it
	// while it is removed.
	unlock, err := lockJournal(jdir)
	if err != nil {
		return res, err
	}
	defer unlock()

	root, err := unix.Open(loc.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		// No workspace: no private directory to remove.
	case err != nil:
		return res, fmt.Errorf("workspace %s: %w", loc.Workspace, err)
	default:
		had, err := aside.Purge(root, token)
		unix.Close(root)
		if err != nil {
			return res, err
		}
		if had {
			res.Removed = append(res.Removed, filepath.Join(loc.Workspace, aside.Dir))
		}
	}
	for _, dir := range []string{jdir, loc.Dir} {
		had, err := removeDir(dir)
		if err != nil {
			return res, err
		}
		if had {
			res.Removed = append(res.Removed, dir)
		}
	}
	return res, nil
}

// checkRecordedJournal fails unless jdir, where the state directory of
// loc records the journal, is gone or holds a journal's lock file.
func checkRecordedJournal(loc Location, jdir string) error {
	if _, err := os.Lstat(jdir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if fi, err := os.Lstat(filepath.Join(jdir, "lock")); err == nil && fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("the state directory %s records the journal at %s, which holds no journal (no lock file); nothing was removed: to remove it anyway, %s",
		loc.Dir, jdir, human.ShellCommand("cowfs", "purge", "-w", loc.Workspace, "--journal", jdir))
}

// lockJournal takes the journal's lock (as journal.Open does) if the
// journal exists, and returns what releases it.
func lockJournal(jdir string) (func(), error) {
	fd, err := unix.Open(filepath.Join(jdir, "lock"), unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal lock: %w", err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: the journal %s is locked", ErrServed, jdir)
		}
		return nil, fmt.Errorf("journal lock: %w", err)
	}
	return func() { unix.Close(fd) }, nil
}

// removeDir removes dir and everything beneath it through a descriptor
// of its parent, following no link beneath the parent, and reports
// whether it existed.
func removeDir(dir string) (bool, error) {
	parent, err := unix.Open(filepath.Dir(dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("purge %s: %w", dir, err)
	}
	defer unix.Close(parent)
	name := filepath.Base(dir)
	if _, _, err := backing.Lstatat(parent, name); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("purge %s: %w", dir, err)
	}
	if err := backing.RemoveAll(parent, name); err != nil {
		return true, fmt.Errorf("purge %s: %w", dir, err)
	}
	return true, nil
}

// Purge is DELETE /v1/journal: the daemon stops — as cowfs umount stops
// it, refused while processes use the mount or a turn is open — and,
// once the journal is closed, removes what cowfs keeps for the
// workspace (purgeStopped), answering with what it removed before it
// exits. It is the one-request way for a harness to throw a
// workspace's history away (TanStack's purgeSnapshots).
func (s *service) Purge(ctx context.Context) (ctl.Purged, error) {
	d := s.d
	if d.offline {
		return ctl.Purged{}, ctl.Errorf(ctl.CodeConflict, "no daemon serves %s; cowfs purge removes its journal", d.opts.Workspace)
	}
	d.rbMu.Lock()
	defer d.rbMu.Unlock()
	if t, open := d.j.OpenTurn(); open {
		return ctl.Purged{}, d.turnOpen(t.Num, "purging the journal")
	}
	if m, ok := CowfsMount(d.opts.Mountpoint); ok {
		if hs := m.Holders(); len(hs) > 0 {
			var who []string
			for _, h := range hs {
				who = append(who, h.String())
			}
			return ctl.Purged{}, ctl.Errorf(ctl.CodeBusy, "processes use %s, so it stays mounted and its journal kept: %s; leave it (cd elsewhere) or end them, then purge again: %s",
				d.opts.Mountpoint, strings.Join(who, "; "), human.ShellCommand("cowfs", "purge", "--stop", "-w", d.opts.Workspace))
		}
	}
	// Wait (main goroutine) releases the rest only once this is done,
	// and the control socket answers until then.
	d.purging.Add(1)
	defer d.purging.Done()
	d.Stop()
	if d.stopErr != nil {
		return ctl.Purged{}, fmt.Errorf("purge: %w", d.stopErr)
	}
	if d.detached {
		return ctl.Purged{}, ctl.Errorf(ctl.CodeBusy, "a process came to use %s as it was unmounted: it is detached, and the daemon stops when the last such process lets go; the journal is kept (cowfs purge then)", d.opts.Mountpoint)
	}
	d.mount.Wait()
	d.pruneMu.Lock()
	d.closeWorkspace()
	d.pruneMu.Unlock()
	res, err := purgeStopped(d.loc, d.opts.JournalDir)
	if err != nil {
		return ctl.Purged{Removed: res.Removed}, fmt.Errorf("purge (cowfs purge finishes it): %w", err)
	}
	d.log.Info("purged", "removed", strings.Join(res.Removed, ", "))
	return ctl.Purged{Removed: res.Removed}, nil
}
