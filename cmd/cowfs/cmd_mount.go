package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/human"
)

type mountOptions struct {
	mountpoint  string
	journal     string
	window      int
	maxSize     byteSize
	memLimit    byteSize
	sync        bool
	background  bool
	debug       bool
	noFanotify  bool
	cpuProfile  string
	cache       time.Duration
	maxNodes    int
	passthrough bool
	agent       agentFlags
	remote      listenFlags
	json        bool
}

// readyEnv names the descriptor a background daemon reports its start on.
const readyEnv = "COWFS_READY_FD"

func newMountCommand() *cobra.Command {
	var opts mountOptions
	cmd := &cobra.Command{
		Use:   "mount [flags] WORKSPACE",
		Short: "Mount cowfs over a workspace and journal every change to it",
		Long: `Mount cowfs over WORKSPACE (without it, over -w WORKSPACE, as other commands
take it), in place: the agent's paths do not change. With --mountpoint the view
appears at DIR instead and WORKSPACE is only the backing directory.

The daemon runs in the foreground until SIGINT or SIGTERM, or until
'cowfs umount WORKSPACE'; then it unmounts and closes the journal. With
--background it detaches and returns once the mount and the control socket are
ready; it then logs to the workspace's state directory.

With --json, once the mount is ready it prints the daemon's status (as
'cowfs status --json': its pid, socket, mountpoint, journal) on standard
output; in the foreground it then goes on serving.

A stale mount left by a daemon that was killed is cleared, with a warning.

` + agentHelp + ` Here they are the default of every turn that names
no agent of its own ('cowfs turn begin --agent-*'). Each --agent-pid must be
running (else exit 2).

` + listenHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := mountedWorkspace(args)
			if err != nil {
				return err
			}
			return runMount(opts, ws)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.mountpoint, "mountpoint", "", "mount the view at `DIR` instead of over the workspace")
	addDaemonFlags(cmd, &opts)
	f.BoolVarP(&opts.background, "background", "d", false, "detach once the mount is ready")
	f.StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of the daemon to `FILE` (for go tool pprof)")
	f.BoolVar(&opts.json, "json", false, "print the daemon's status as JSON once the mount is ready")
	return cmd
}

// mountedWorkspace is the workspace mount was given: WORKSPACE, else,
// as every other command takes it, -w. One is needed: a mount over the
// current directory by default would catch a mistyped command.
func mountedWorkspace(args []string) (string, error) {
	switch {
	case len(args) == 1 && args[0] == "":
		return "", usageError{fmt.Errorf("WORKSPACE %w", errEmptyPath)}
	case len(args) == 1:
		return args[0], nil
	case global.workspace != "":
		return global.workspace, nil
	}
	return "", usageError{errors.New("needs the workspace: cowfs mount WORKSPACE, or -w WORKSPACE")}
}

// addDaemonFlags adds the flags of the daemon's journal and mount, for
// mount and run.
func addDaemonFlags(cmd *cobra.Command, opts *mountOptions) {
	f := cmd.Flags()
	f.StringVar(&opts.journal, "journal", "", "keep the journal in `DIR` (default: the workspace's state directory)")
	f.IntVar(&opts.window, "window", 10, "keep the last `N` turns")
	opts.maxSize = daemon.DefaultMaxJournalSize
	f.Var(&opts.maxSize, "max-journal-size", "let the journal take at most `SIZE` (e.g. 500MiB, 8GiB; none: only free space bounds it); past it the oldest turns leave the window early")
	opts.memLimit = defaultMemoryLimit
	f.Var(&opts.memLimit, "memory-limit", "keep the daemon's Go heap near `SIZE` at most, collecting garbage sooner as it nears it (none: Go's default, twice what is live; GOMEMLIMIT overrides)")
	f.BoolVar(&opts.sync, "sync", false, "fsync every journal commit (survives power loss, costs latency)")
	f.BoolVar(&opts.debug, "debug", false, "log every FUSE request")
	f.BoolVar(&opts.noFanotify, "no-fanotify", false, "find changes made behind the mount by stat'ing every path the window names at each turn boundary, not by watching the backing directory with fanotify")
	f.IntVar(&opts.maxNodes, "max-nodes", daemon.DefaultMaxNodes, "let the kernel keep at most `N` files and directories looked up before the least used are dropped from its cache (each costs the daemon about 500 bytes; a dropped name is looked up again when next used)")
	f.DurationVar(&opts.cache, "cache-timeout", daemon.DefaultCacheTimeout, "let the kernel answer from its caches for `D`; a change made to the backing directory behind the mount's back may stay unseen that long (0: no caching)")
	f.BoolVar(&opts.passthrough, "passthrough", false, "let the kernel read and write files a turn or step created itself (FUSE passthrough: new files at native speed, but every open then reaches the daemon; default: every read and write goes through the daemon)")
	opts.agent.add(f, "turns'")
	opts.remote.add(f)
}

// daemonOptions checks the flags and returns the daemon's options.
func daemonOptions(opts mountOptions, ws string) (daemon.Options, error) {
	if opts.maxNodes < 1024 {
		return daemon.Options{}, usageError{fmt.Errorf("--max-nodes must be at least 1024, not %d", opts.maxNodes)}
	}
	if opts.window < 1 {
		return daemon.Options{}, usageError{fmt.Errorf("--window must be at least 1, not %d", opts.window)}
	}
	dopts := daemon.Options{
		Workspace: ws, Mountpoint: opts.mountpoint, JournalDir: opts.journal,
		Window: opts.window, MaxJournalSize: int64(opts.maxSize), Sync: opts.sync, Debug: opts.debug, Version: version,
		CacheTimeout: cacheTimeout(opts.cache), MaxNodes: opts.maxNodes, Agent: opts.agent.spec(),
		NoFanotify: opts.noFanotify, NoPassthrough: !opts.passthrough,
	}
	return dopts, opts.remote.options(&dopts)
}

func runMount(opts mountOptions, ws string) error {
	dopts, err := daemonOptions(opts, ws)
	if err != nil {
		return err
	}
	ready := readyPipe()
	if opts.background && ready == nil {
		if err := daemon.CheckPlacement(dopts); err != nil {
			return err
		}
		if err := startBackground(ws); err != nil || !opts.json {
			return err
		}
		loc, err := daemon.Locate(ws)
		if err != nil {
			return err
		}
		return printStatus(loc.Socket())
	}
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	applyMemoryLimit(opts.memLimit)
	log := daemonLogger(os.Stderr, opts.debug)
	dopts.Logger = log
	d, err := daemon.Start(dopts)
	if ready != nil {
		reportReady(ready, d, err)
	}
	if err != nil {
		return err
	}
	if opts.json && ready == nil {
		// (A background daemon's output is its log: the command that
		// started it prints the status.)
		if err := printStatus(d.Socket()); err != nil {
			d.Stop()
			d.Wait()
			return err
		}
	}
	reloadOnHangup(d) // listen.go
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for s := range sig {
			log.Info("unmounting", "signal", s.String())
			d.Stop()
		}
	}()
	return d.Wait()
}

// printStatus prints the status of the daemon at socket as JSON.
func printStatus(socket string) error {
	ctx, cancel := requestContext()
	defer cancel()
	st, err := ctl.NewClient(socket).Status(ctx)
	if err != nil {
		return err
	}
	return printJSON(st)
}

// daemonLogger logs to w, every FUSE request too if debug.
func daemonLogger(w io.Writer, debug bool) *slog.Logger {
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// cacheTimeout turns the flag's value into fs.Config's: 0 there means
// the default, negative none.
func cacheTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// startReport is what a background daemon tells the command that started it.
type startReport struct {
	Pid   int      `json:"pid"`
	Notes []string `json:"notes,omitempty"`
	Error string   `json:"error,omitempty"`
	Code  int      `json:"code,omitempty"`
}

func readyPipe() *os.File {
	fd, err := strconv.Atoi(os.Getenv(readyEnv))
	if err != nil {
		return nil
	}
	os.Unsetenv(readyEnv)
	return os.NewFile(uintptr(fd), "ready")
}

func reportReady(w *os.File, d *daemon.Daemon, err error) {
	r := startReport{Pid: os.Getpid()}
	if err != nil {
		r.Error, r.Code = err.Error(), exitCode(err)
	} else {
		r.Notes = d.Notes
	}
	json.NewEncoder(w).Encode(r)
	w.Close()
}

// openDaemonLog opens the log of the workspace's daemon for appending.
func openDaemonLog(ws string) (*os.File, error) {
	p, err := daemon.LogPath(ws)
	if err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// startBackground starts this command again, detached, and waits until
// it reports that the mount is ready (or why it is not).
func startBackground(ws string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := openDaemonLog(ws)
	if err != nil {
		return err
	}
	defer logf.Close()
	logPath := logf.Name()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), readyEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	w.Close()
	b, _ := io.ReadAll(r)
	r.Close()
	var rep startReport
	if json.Unmarshal(b, &rep) != nil {
		cmd.Wait()
		return fmt.Errorf("the daemon exited while starting; see %s", logPath)
	}
	cmd.Process.Release()
	if rep.Error != "" {
		return codedError{errors.New(rep.Error), rep.Code}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(os.Stderr, "cowfs: %s\n", n)
	}
	fmt.Fprintf(os.Stderr, "cowfs: mounted %s (daemon pid %d, log %s)\n", ws, rep.Pid, logPath)
	return nil
}

// byteSize is a flag value of bytes: a number with an optional unit (K,
// M, G, T, KiB, MiB, GiB, TiB: powers of 1024; KB, MB, GB, TB: of 1000),
// or "none" (-1).
type byteSize int64

func (b *byteSize) String() string {
	if *b < 0 {
		return "none"
	}
	return human.Bytes(int64(*b))
}

func (b *byteSize) Type() string { return "SIZE" }

func (b *byteSize) Set(s string) error {
	if s == "none" || s == "0" {
		*b = -1
		return nil
	}
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q is not a size (e.g. 500MiB, 8GiB, none)", s)
	}
	units := map[string]float64{"": 1, "B": 1,
		"K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20, "G": 1 << 30, "GiB": 1 << 30, "T": 1 << 40, "TiB": 1 << 40,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
	u, ok := units[s[i:]]
	if !ok {
		return fmt.Errorf("%q: unknown unit %q (K, M, G, T, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s, s[i:])
	}
	*b = byteSize(n * u)
	return nil
}
