package fs

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"sync"
	"syscall"
	"time"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/agent"
	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
)

// Config describes one mount.
type Config struct {
	// Root is an O_PATH descriptor of the backing directory, opened
	// before the mount covers it (for a mount in place). The mount
	// keeps a duplicate; the caller keeps its own.
	Root int
	// Mountpoint is where the workspace's view appears.
	Mountpoint string
	// FsName is shown as the source in the mount table.
	FsName string

	Journal Journal
	Aside   *aside.Area
	// Agents says which processes are a turn's agent when the turn names
	// them (agent.go); nil: every process is.
	Agents *agent.Tracker
	Logger *slog.Logger // nil: silent
	Debug  bool         // log every FUSE request

	// CacheTimeout is how long the kernel may answer lookups, attributes
	// and (across opens) file content from its caches without asking.
	// Every change through the mount keeps those caches right, and a
	// rollback invalidates what it changes; only a change made to the
	// backing directory behind the mount's back can stay unseen, for
	// up to this long. Zero means DefaultCacheTimeout; negative, no
	// caching at all.
	CacheTimeout time.Duration
	// MaxNodes is how many nodes the kernel may keep known before the
	// least used are pruned (trim.go); zero means DefaultMaxNodes.
	MaxNodes int
	// NoSuid mounts the view nosuid: set-user-ID and set-group-ID bits
	// and file capabilities do not take effect on exec. Otherwise they
	// do where the backing filesystem lets them (mountflags.go).
	NoSuid bool
	// NoDev mounts the view nodev: device nodes cannot be opened.
	// Otherwise they can where the backing filesystem lets them.
	NoDev bool
	// NoPassthrough keeps the daemon on the path of every read and write,
	// also of files the epoch created (passthrough.go).
	NoPassthrough bool
}

// DefaultCacheTimeout is how long the kernel caches by default.
const DefaultCacheTimeout = time.Hour

// Mount is a mounted workspace.
type Mount struct {
	server     *fuse.Server
	mountpoint string
	root       *Node
	inval      invalidations
	raw        *counting
	closeOnce  sync.Once
	trimDone   chan struct{} // ends the trimmer
	log        *slog.Logger
}

// ErrNoFUSE: /dev/fuse is missing.
var ErrNoFUSE = errors.New("/dev/fuse is missing (load the fuse module, or give the container --device /dev/fuse)")

// ErrNotPermitted: the kernel refused the mount.
var ErrNotPermitted = errors.New("not permitted to mount (run as root, or with CAP_SYS_ADMIN)")

// New mounts the workspace described by cfg and starts serving it.
func New(cfg Config) (*Mount, error) {
	if err := syscall.Access("/dev/fuse", unix.R_OK|unix.W_OK); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, ErrNoFUSE
		}
		return nil, fmt.Errorf("%w: /dev/fuse: %v", ErrNotPermitted, err)
	}
	rootFd, err := unix.FcntlInt(uintptr(cfg.Root), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("backing directory: %w", err)
	}
	st, err := backing.Fstat(rootFd)
	if err != nil {
		unix.Close(rootFd)
		return nil, fmt.Errorf("backing directory: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	root := &Node{fs: &filesystem{
		rec: newRecorder(cfg.Journal, cfg.Aside, logger), root: rootFd,
		tree: backing.NewTree(rootFd), rootDev: st.Dev,
	}}
	root.fs.rec.agents = cfg.Agents
	root.fs.pass.ready = make(chan struct{})
	root.fs.fds.limit = fdLimit()
	root.fs.fds.writers.done = make(chan struct{})
	root.fs.trim = newTrimmer(cfg.MaxNodes)

	timeout := cfg.CacheTimeout
	switch {
	case timeout == 0:
		timeout = DefaultCacheTimeout
	case timeout < 0:
		timeout = 0
	}
	root.fs.cacheTimeout = timeout
	opts := &gofs.Options{
		MountOptions: fuse.MountOptions{
			FsName:            cfg.FsName,
			Name:              "cowfs",
			DirectMountStrict: true, // root needs no fusermount
			AllowOther:        true, // the workspace is used by every user, as before
			// The kernel checks permissions as it does on the backing
			// directory; without this a root daemon would let any uid
			// write root's 0644 files.
			Options: append([]string{"default_permissions"}, mountFlags(rootFd, cfg.NoSuid, cfg.NoDev)...),
			// Access ACLs checked by the kernel, default ACLs applied
			// to new entries (umask.go).
			EnableAcl: true,
			MaxWrite:  1 << 20,
			// fcntl and flock locks are the kernel's (see io.go).
			EnableLocks: false,
			// See killpriv.go; DONT_MASK: the umask is applied here
			// (umask.go).
			ExtraCapabilities: fuse.CAP_HANDLE_KILLPRIV_V2 | fuse.CAP_DONT_MASK,
			// One goroutine reads and serves each request itself,
			// handing the reading over when a request runs long
			// (internal/_gofuse/fuse/inline.go; docs/design.md,
			// "Serving requests").
			ServeInline: true,
			// Reads are answered with bytes (Node.Read), never a
			// descriptor to splice from; yet with splicing allowed,
			// go-fuse wrote each answer's header into a pipe before
			// finding it had nothing to splice, then drained the
			// pipe: three syscalls more per READ, and a wake-up of
			// a runtime thread, since its pipes are in Go's poller.
			DisableSplice: true,
			// Pages survive the daemon's own writes (coherence.go).
			ExplicitDataCacheControl: root.fs.explicitData(),
			Debug:                    cfg.Debug,
			Logger:                   log.New(slogWriter{logger}, "", 0),
		},
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		NullPermissions: true, // show modes as they are
		// The root's identity is its backing inode's, as every node's:
		// records of its entry changes name it, so a rollback puts its
		// times back, and invalidations reach it.
		RootStableAttr: rootStable(root.fs, rootFd),
		Logger:         log.New(slogWriter{logger}, "", 0),
	}
	// An open file whose names were all removed is read and written
	// through its aside entry (io.go): keep the entry while the kernel
	// knows the node.
	area := cfg.Aside
	area.SetInUse(func(name string) bool { return root.fs.orphans.holds(area.Path(name)) })
	root.fs.orphans.left = func(p string) { root.fs.later(func() { root.fs.freeKept(p) }) }
	noteOwnUmask() // umask.go
	var inner fuse.RawFileSystem = umaskFS{gofs.NewNodeFS(root, opts), &root.fs.umasks}
	inner = writebackFS{inner, &root.fs.writebacks} // rewritten.go
	if root.fs.keepCache() {
		inner = noOpendir{inner} // opendir.go
	}
	raw := &counting{RawFileSystem: inner}
	server, err := serve(cfg.Mountpoint, raw, &opts.MountOptions)
	if err != nil {
		unix.Close(rootFd)
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("%w: %v", ErrNotPermitted, err)
		}
		return nil, fmt.Errorf("mount %s: %w", cfg.Mountpoint, err)
	}
	var mst syscall.Stat_t
	if err := syscall.Stat(cfg.Mountpoint, &mst); err == nil {
		root.fs.dev.Store(mst.Dev)
	}
	m := &Mount{server: server, mountpoint: cfg.Mountpoint, root: root, raw: raw, trimDone: make(chan struct{}), log: logger}
	m.probePassthrough(!cfg.NoPassthrough, logger.Warn)
	root.fs.apart(func() {
		root.fs.trim.run(root.EmbeddedInode(), m.trimDone, func(err error) {
			logger.Warn("the kernel refuses to prune nodes: the daemon's memory grows with what it caches", "err", err)
		})
	})
	return m, nil
}

// serve mounts raw at mountpoint and serves it, as gofs.Mount does with
// go-fuse's node API alone; raw puts the request counter (requests.go),
// noOpendir (opendir.go), writebackFS (rewritten.go) and umaskFS
// (umask.go) in front of it.
func serve(mountpoint string, raw fuse.RawFileSystem, opts *fuse.MountOptions) (*fuse.Server, error) {
	server, err := fuse.NewServer(raw, mountpoint, opts)
	if err != nil {
		return nil, err
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		// The serve loop ends by itself: the mount did not happen.
		return nil, err
	}
	return server, nil
}

// Requests returns how many FUSE requests of each operation the mount
// has served since it started (requests.go).
func (m *Mount) Requests() map[string]uint64 { return m.raw.counts() }

// EpochBegan lets go of what the mount kept of the epoch before
// (recorder.forgetEpoch): call it after a turn or step boundary.
func (m *Mount) EpochBegan() {
	rec := m.root.fs.rec
	g := rec.j.Enter()
	epoch := g.Epoch
	g.Leave()
	rec.forgetEpoch(epoch)
	m.root.fs.pass.captureLive(m.log.Warn)
	m.forgetCached(m.root.fs.pass.captureAdopted(m.root.fs, m.log.Warn))
}

// Wait returns when the kernel has ended the mount.
func (m *Mount) Wait() {
	m.server.Wait()
	m.closeOnce.Do(func() {
		fs := m.root.fs
		close(m.trimDone)
		fs.bg.Wait() // what OnForget started uses the descriptors
		fs.fds.close()
		unix.Close(fs.root)
	})
}

// Unmount unmounts. If processes still use the workspace it detaches
// the mount instead (it vanishes from the namespace; those processes
// keep working through it, still journaled) and returns; Wait returns
// once they are done.
func (m *Mount) Unmount() (lazy bool, err error) {
	if err := m.server.Unmount(); err == nil {
		return false, nil
	} else if !errors.Is(err, syscall.EBUSY) {
		return false, fmt.Errorf("unmount %s: %w", m.mountpoint, err)
	}
	if err := syscall.Unmount(m.mountpoint, syscall.MNT_DETACH); err != nil {
		return false, fmt.Errorf("unmount %s: %w", m.mountpoint, err)
	}
	return true, nil
}

// slogWriter turns go-fuse's log lines into debug records.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug("fuse: " + string(trimNewline(p)))
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && p[len(p)-1] == '\n' {
		p = p[:len(p)-1]
	}
	return p
}
