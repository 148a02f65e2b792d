package daemon

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// # Working without a daemon
//
// When no daemon serves a workspace — cowfs run has exited, a sandbox
// crashed, the mount was never started again — its history is still
// in the journal, and the backing directory is the workspace. OpenOffline
// opens both as Start would, without mounting: it takes the journal's
// lock (so no daemon can start meanwhile, and none may be running:
// Badger's directory is never opened twice, and the error names the
// holder's pid), finishes a rollback a crash interrupted, and rescans,
// so paths changed while no daemon ran are journaled outside any turn
// and rollbacks skip them unless forced, as after a restart. It then
// serves the same ctl.Service on a private socket in a fresh 0700
// directory, so the CLI talks to it exactly as to a daemon: the same
// results, guards and JSON. Turns cannot begin: nothing could be
// journaled in them. A turn left open — by a harness that went away, a
// daemon that was killed, a container that stopped — can end, as it
// would with a daemon (EndTurn), so that a rollback is never stuck
// behind it. It ends through the journal's EndTurn, as a daemon's end
// does, under the journal's lock: cut short, the turn stays open, to be
// ended again.

// ErrOffline: what was asked needs a mounted workspace.
var ErrOffline = ctl.Errorf(ctl.CodeConflict, "no cowfs daemon serves this workspace; turns begin only while it is mounted (cowfs mount -d, cowfs run --turn)")

// OpenOffline opens the workspace at or above opts.Workspace that has a
// journal, with no daemon serving it, and serves its control API on a
// private socket (Socket) until Close. With no journal there it fails
// with ctl.ErrNotRunning; while another process holds the journal,
// with ErrJournalLocked naming its pid. With no Logger it logs to the
// workspace's daemon log.
func OpenOffline(opts Options) (_ *Daemon, err error) {
	// Keep every turn the journal holds: how many to keep, and in how
	// much space, is the daemon's setting (--window, --max-journal-size),
	// which a command reading history does not know.
	if opts.Window == 0 {
		opts.Window = math.MaxInt32
	}
	if opts.MaxJournalSize == 0 {
		opts.MaxJournalSize = -1
	}
	d := &Daemon{opts: opts, log: opts.Logger, started: time.Now(), rootFd: -1, stopping: make(chan struct{}), offline: true}
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	if d.afterStep, err = pauseHook(); err != nil {
		return nil, err
	}
	loc, jdir, err := findJournal(opts.Workspace)
	if err != nil {
		return nil, err
	}
	d.loc = loc
	ws := loc.Workspace
	if opts.JournalDir != "" {
		jdir = resolved(opts.JournalDir)
	}
	d.opts.Workspace, d.opts.JournalDir = ws, jdir
	if d.log == nil {
		if d.logFile, err = os.OpenFile(loc.Log(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return nil, fmt.Errorf("state directory: %w", err)
		}
		d.log = slog.New(slog.NewTextHandler(d.logFile, nil)).With("offline", os.Getpid())
	}
	cleared, err := clearStale(ws, d.log)
	if err != nil {
		return nil, err
	}
	if cleared {
		d.Notes = append(d.Notes, "cleared a stale mount at "+ws+" left by a cowfs daemon that died")
	}
	if err := checkDir(ws, "workspace"); err != nil {
		return nil, err
	}
	if err := checkPlacement(ws, ws, loc.Dir, jdir); err != nil {
		return nil, err
	}
	// The journal first: if a daemon runs (its socket out of reach), its
	// lock names it.
	if err := d.openJournal(jdir); err != nil {
		return nil, err
	}
	// A cowfs mount over the workspace, yet the journal was free: its
	// daemon is not this workspace's, or hangs; cowfs keeps out.
	if m, ok := mountAt(ws); ok && m.FSType == "fuse.cowfs" {
		return nil, fmt.Errorf("%w: %s is a cowfs mount whose daemon does not answer on %s; cowfs changes nothing beneath it", ErrAlreadyMounted, ws, loc.Socket())
	}
	if err := d.openWorkspace(ws, jdir); err != nil {
		return nil, err
	}
	if d.private, err = os.MkdirTemp("", "cowfs-offline-"); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln, err := ctl.Listen(d.Socket())
	if err != nil {
		return nil, err
	}
	d.srv = ctl.NewServer(&service{d}, d.log)
	go func() {
		if err := d.srv.Serve(ln); err != nil {
			d.log.Error("control socket stopped", "err", err)
		}
	}()
	d.log.Info("opened without a daemon", "workspace", ws, "journal", jdir)
	return d, nil
}

// findJournal returns the location and journal of the workspace at
// path or the nearest parent that has a journal.
func findJournal(path string) (Location, string, error) {
	own, err := Locate(path)
	if err != nil {
		return own, "", err
	}
	for p := own.Workspace; ; p = filepath.Dir(p) {
		if l, err := Locate(p); err == nil {
			if jdir, ok := recordedJournal(l); ok {
				return l, jdir, nil
			}
		}
		if p == "/" {
			return own, "", fmt.Errorf("%w, and %s has no journal (no cowfs ever ran there)", ctl.ErrNotRunning, own.Workspace)
		}
	}
}

// Close ends an offline daemon: the private socket, then the journal.
func (d *Daemon) Close() {
	d.Stop()
	d.release()
	d.log.Info("closed")
	if d.logFile != nil {
		d.logFile.Close()
	}
}

// Workspace returns the workspace's path: its backing directory.
func (d *Daemon) Workspace() string { return d.opts.Workspace }
