package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/agent"
	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/fs"
	"github.com/cowfs/cowfs/human"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/rescan"
)

// DefaultMaxJournalSize is the journal's size bound unless told otherwise.
const DefaultMaxJournalSize = journal.DefaultMaxSize

// Options configure a daemon.
type Options struct {
	Workspace  string // the backing directory
	Mountpoint string // where to mount the view; empty: over Workspace, in place
	JournalDir string // empty: in the state directory
	Window     int    // turns kept; 0: journal.DefaultWindow
	// MaxJournalSize bounds the journal's size (journal.Options.MaxSize:
	// 0 means DefaultMaxJournalSize, negative no bound).
	MaxJournalSize int64
	Sync           bool // fsync every journal commit
	Logger         *slog.Logger
	Debug          bool // log every FUSE request
	Version        string
	// CacheTimeout bounds the kernel's caching (see fs.Config).
	CacheTimeout time.Duration
	// MaxNodes bounds the nodes the kernel keeps known (see fs.Config).
	MaxNodes int
	// NoSuid and NoDev mount the view nosuid and nodev whatever the
	// backing filesystem allows (see fs.Config).
	NoSuid, NoDev bool
	// NoPassthrough keeps the daemon on the path of every read and
	// write, also of files the epoch created (see fs.Config).
	NoPassthrough bool
	// Agent is the agent scope of every turn that names none (agent.go);
	// empty: such a turn belongs to every process.
	Agent ctl.AgentScope
	// NoFanotify makes every rescan stat every tracked path, rather than
	// what fanotify saw change since the last (package rescan).
	NoFanotify bool
	// Listen, https://HOST:PORT, also serves the control API there
	// over mutual TLS with the certificates in TLSDir (remote.go).
	Listen, TLSDir string
}

// Daemon serves one mounted workspace.
type Daemon struct {
	opts    Options
	loc     Location
	mntLoc  *Location // the mountpoint's own location, if not in place
	log     *slog.Logger
	started time.Time

	rootFd  int // O_PATH descriptor of the backing directory
	rootDev uint64
	tree    *backing.Tree
	j       *journal.Journal
	area    *aside.Area
	scanner *rescan.Scanner
	mount   *fs.Mount
	srv     *ctl.Server
	remote  *remote // the TLS listener, if Options.Listen
	// agents follows the processes agent scopes name; defaultAgent is
	// the scope of turns that name none (agent.go).
	agents       *agent.Tracker
	agentMu      sync.Mutex
	defaultAgent *journal.Scope

	offline bool     // OpenOffline: no mount, turns refused
	private string   // OpenOffline: the private socket's directory
	logFile *os.File // OpenOffline: its log, if it opened one

	// Notes are things Start did that the user should hear about.
	Notes []string

	afterStep func(int) // a test hook (testhook.go)
	// leftGate, if set, is called when a diff or a copy of content at
	// a turn has left the gate and is about to copy: a test hook, so a
	// test can change the workspace at that exact point.
	leftGate func()

	stopping chan struct{} // closed by Stop: event streams end
	rbMu     sync.Mutex    // one rollback, unrevert or turn start at a time
	pruneMu  sync.Mutex
	stopOnce sync.Once
	stopErr  error
	detached bool           // Stop found the mount busy and detached it
	purging  sync.WaitGroup // a DELETE /v1/journal under way (purge.go)
	closed   sync.Once      // closeWorkspace
}

// Start checks that the workspace can be mounted, mounts it and starts
// serving its control socket. On error nothing is left mounted or open.
func Start(opts Options) (_ *Daemon, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Daemon{opts: opts, log: log, started: time.Now(), rootFd: -1, stopping: make(chan struct{})}
	defer func() {
		if err != nil {
			if d.mount != nil {
				d.mount.Unmount()
			}
			d.release()
		}
	}()

	if d.afterStep, err = pauseHook(); err != nil {
		return nil, err
	}
	if opts.Listen != "" {
		if d.remote, err = openRemote(opts); err != nil {
			return nil, err
		}
	}
	ws, err := canonical(opts.Workspace)
	if err != nil {
		return nil, err
	}
	mnt := ws
	if opts.Mountpoint != "" {
		if mnt, err = canonical(opts.Mountpoint); err != nil {
			return nil, err
		}
	}
	for _, p := range []string{ws, mnt} {
		cleared, err := clearStale(p, log)
		if err != nil {
			return nil, err
		}
		if cleared {
			d.Notes = append(d.Notes, "cleared a stale mount at "+p+" left by a cowfs daemon that died")
		}
	}
	if err := checkDir(ws, "workspace"); err != nil {
		return nil, err
	}
	if err := checkDir(mnt, "mountpoint"); err != nil {
		return nil, err
	}
	if d.loc, err = Locate(ws); err != nil {
		return nil, err
	}
	jdir := journalDir(opts, d.loc)
	d.opts.JournalDir = jdir
	if err := checkPlacement(ws, mnt, d.loc.Dir, jdir); err != nil {
		return nil, err
	}
	if err := refuseLiveMount(mnt, d.loc); err != nil {
		return nil, err
	}
	if err := makeStateDirs(d.loc); err != nil {
		return nil, err
	}
	// The default agent scope names processes that must be there now.
	d.agents = agent.NewTracker(log)
	if d.defaultAgent, err = d.agents.Resolve(specOf(opts.Agent)); err != nil {
		return nil, fmt.Errorf("the agent scope (--agent-*): %w", err)
	}

	if err := d.open(ws, jdir); err != nil {
		return nil, err
	}

	d.mount, err = fs.New(fs.Config{
		Root: d.rootFd, Mountpoint: mnt, FsName: ws,
		Journal: d.j, Aside: d.area, Agents: d.agents, Logger: log, Debug: opts.Debug,
		CacheTimeout: opts.CacheTimeout, MaxNodes: opts.MaxNodes,
		NoSuid: opts.NoSuid, NoDev: opts.NoDev, NoPassthrough: opts.NoPassthrough,
	})
	if err != nil {
		return nil, err
	}
	// Files an earlier mount's passthrough opens still write, after a
	// crash, are captured at boundaries like the mount's own (fs/adopt.go).
	if n, err := d.mount.AdoptWriters(); err != nil {
		log.Warn("looking for processes an earlier mount left writing", "err", err)
	} else if n > 0 {
		log.Warn("processes still write files through an earlier mount of the workspace; they are captured at each boundary", "files", n)
	}
	d.opts.Workspace, d.opts.Mountpoint = ws, mnt

	ln, err := ctl.Listen(d.loc.Socket())
	if err != nil {
		return nil, err
	}
	if mnt != ws {
		if err := d.linkMountpoint(mnt); err != nil {
			ln.Close()
			os.Remove(d.loc.Socket()) // closing a listener leaves its name (ctl.Listen)
			return nil, err
		}
	}
	d.srv = ctl.NewServer(&service{d}, log)
	go func() {
		if err := d.srv.Serve(ln); err != nil {
			log.Error("control socket stopped", "err", err)
		}
	}()
	d.serveRemote()
	log.Info("mounted", "workspace", ws, "mountpoint", mnt, "journal", jdir, "socket", d.loc.Socket())
	return d, nil
}

// open opens what a daemon works with — the journal, the backing
// directory, the aside area and the rescan scanner — finishes what a
// crash interrupted and journals what changed while cowfs was not
// running: everything Start does before it mounts, and all that an
// offline daemon (OpenOffline) needs.
func (d *Daemon) open(ws, jdir string) error {
	if err := d.openJournal(jdir); err != nil {
		return err
	}
	return d.openWorkspace(ws, jdir)
}

// openJournal opens the journal, taking its lock.
func (d *Daemon) openJournal(jdir string) (err error) {
	opts := d.opts
	d.j, err = journal.Open(jdir, journal.Options{Window: opts.Window, MaxSize: opts.MaxJournalSize, Sync: opts.Sync, Logger: d.log})
	return err
}

// openWorkspace opens the rest, once the journal is open.
func (d *Daemon) openWorkspace(ws, jdir string) (err error) {
	log := d.log
	// Open the backing directory before the mount covers it: the
	// daemon reaches it through /proc/self/fd/N from then on.
	if d.rootFd, err = unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("workspace %s: %w", ws, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.rootFd, &st); err != nil {
		return fmt.Errorf("workspace %s: %w", ws, err)
	}
	d.rootDev = st.Dev
	d.tree = backing.NewTree(d.rootFd)
	token, err := d.j.Binding()
	if err != nil {
		return err
	}
	if d.area, err = aside.Open(d.rootFd, token); err != nil {
		if errors.Is(err, aside.ErrForeign) {
			p := filepath.Join(ws, aside.Dir)
			return fmt.Errorf("%w: %s is not cowfs's private directory for this workspace (%v); cowfs did not use, change or delete anything in it. Move it away (mv %s %s.old) and mount again", ErrPlacement, p, err, p, p)
		}
		return err
	}
	if d.scanner, err = rescan.New(d.j, d.tree, d.rootDev, log); err != nil {
		return err
	}
	d.scanner.CountAside(d.area.Links)
	if !d.offline && !d.opts.NoFanotify {
		// From the scan at start-up on, boundaries stat what changed.
		if err := d.scanner.Watch(); err != nil {
			log.Warn("not watching the backing directory: every boundary stats every path the window names", "err", err)
		}
	}
	d.j.SetDropAside(d.area.Drop)
	// Finish a rollback and a prune a crash interrupted, before
	// anything new happens; then find what changed while cowfs was not
	// running.
	if err := d.resume(); err != nil {
		return err
	}
	if found, err := d.rescan(false); err != nil {
		return err
	} else if len(found) > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%s changed while cowfs was not running (see cowfs events); rollbacks leave them alone unless forced", human.Count(len(found), "path was", "paths were")))
	}
	if err := d.j.Prune(d.area.Drop); err != nil {
		return err
	}
	if err := d.sweepAside(); err != nil {
		return err
	}
	return recordJournal(d.loc, jdir)
}

// refuseLiveMount fails if a cowfs daemon that answers already serves mnt.
func refuseLiveMount(mnt string, loc Location) error {
	m, ok := mountAt(mnt)
	if !ok || m.FSType != "fuse.cowfs" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if st, err := ctl.NewClient(loc.Socket()).Status(ctx); err == nil {
		return fmt.Errorf("%w (pid %d): %s", ErrAlreadyMounted, st.Pid, mnt)
	}
	return fmt.Errorf("%w: %s is a cowfs mount whose daemon does not answer; unmount it first (umount -l %s)", ErrAlreadyMounted, mnt, mnt)
}

// linkMountpoint lets the CLI find the daemon from the mountpoint too.
func (d *Daemon) linkMountpoint(mnt string) error {
	l, err := Locate(mnt)
	if err != nil {
		return err
	}
	if err := makeStateDirs(l); err != nil {
		return err
	}
	os.Remove(l.Socket())
	if err := os.Symlink(d.loc.Socket(), l.Socket()); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	d.mntLoc = &l
	return nil
}

// Wait blocks until the workspace is unmounted (by Stop, by cowfs
// umount, or by umount(8)), then closes everything and returns.
func (d *Daemon) Wait() error {
	d.mount.Wait()
	d.purging.Wait()
	d.release()
	d.log.Info("unmounted", "workspace", d.opts.Workspace)
	return d.stopErr
}

// Stop unmounts. If processes still use the workspace the mount is
// detached and Wait returns once they let go.
func (d *Daemon) Stop() {
	d.stopOnce.Do(func() {
		close(d.stopping)
		if d.mount == nil {
			return // offline
		}
		ref, known := CowfsMount(d.opts.Mountpoint)
		lazy, err := d.mount.Unmount()
		if err != nil {
			d.stopErr = err
			d.log.Error("unmount failed", "err", err)
			return
		}
		if lazy {
			d.detached = true
			var who []string
			if known {
				for _, h := range ref.Holders() {
					who = append(who, h.String())
				}
			}
			d.log.Warn("workspace busy: mount detached; the daemon stays until the processes using it let go",
				"holders", strings.Join(who, ", "))
		}
	})
}

// release closes what Start opened, in reverse order.
func (d *Daemon) release() {
	// Wait for a prune or an aside free under way; later ones find the
	// journal closed or the daemon stopping.
	d.pruneMu.Lock()
	defer d.pruneMu.Unlock()
	if d.srv != nil {
		d.srv.Close()
	}
	d.closeRemote()
	d.closeWorkspace()
	if d.agents != nil {
		d.agents.Close()
	}
	// Last: the socket's absence tells cowfs umount the daemon is done.
	if d.mntLoc != nil {
		os.Remove(d.mntLoc.Socket())
	}
	switch {
	case d.private != "":
		os.RemoveAll(d.private)
	case d.srv != nil:
		os.Remove(d.loc.Socket())
	}
}

// closeWorkspace closes the journal, the aside area and the backing
// root's descriptor, once (by release, or first by a purge).
func (d *Daemon) closeWorkspace() {
	d.closed.Do(func() {
		if d.scanner != nil {
			d.scanner.Close()
		}
		if d.j != nil {
			if err := d.j.Close(); err != nil {
				d.log.Error("closing journal", "err", err)
			}
		}
		if d.area != nil {
			d.area.Close()
		}
		if d.rootFd >= 0 {
			unix.Close(d.rootFd)
			d.rootFd = -1
		}
	})
}

// prune drops turns that left the window, in the background.
func (d *Daemon) prune() {
	d.pruneMu.Lock()
	defer d.pruneMu.Unlock()
	if err := d.j.Prune(d.area.Drop); err != nil && !errors.Is(err, journal.ErrClosed) {
		d.log.Error("prune", "err", err)
	}
}

// sweepAside frees aside entries no record names (see journal.Settle).
func (d *Daemon) sweepAside() error {
	names, err := d.j.AsideNames()
	if err != nil {
		return err
	}
	n, err := d.area.Sweep(func(name string) bool { return names[name] })
	if n > 0 {
		d.log.Info("freed aside entries no record names", "count", n)
	}
	return err
}

// freeAside frees aside entries the journal no longer names, in the
// background, one batch at a time with prunes.
func (d *Daemon) freeAside(names []string) {
	d.pruneMu.Lock()
	defer d.pruneMu.Unlock()
	for _, name := range names {
		select {
		case <-d.stopping:
			return // the next start sweeps the rest
		default:
		}
		if err := d.area.Drop(name); err != nil {
			d.log.Warn("freeing an aside entry", "name", name, "err", err)
		}
	}
}

// Socket returns the control socket's path.
func (d *Daemon) Socket() string {
	if d.private != "" {
		return filepath.Join(d.private, "ctl.sock")
	}
	return d.loc.Socket()
}

// LogPath returns where a background daemon of the workspace logs.
func LogPath(workspace string) (string, error) {
	l, err := Locate(workspace)
	if err != nil {
		return "", err
	}
	if err := makeStateDirs(l); err != nil {
		return "", err
	}
	return l.Log(), nil
}

// Unmount clears a mount whose daemon is gone: a stale one (ENOTCONN),
// or, with force, any cowfs mount at path, its FUSE connection aborted
// first (Abort) — asking it would wait on a daemon that may hang.
func Unmount(path string, force bool) (bool, error) {
	abs, err := canonical(path)
	if err != nil {
		return false, err
	}
	if m, ok := mountAt(abs); force && ok && m.FSType == "fuse.cowfs" {
		if _, err := Abort(abs); err != nil {
			return false, err
		}
		return true, nil
	}
	return clearStale(abs, slog.New(slog.DiscardHandler))
}
