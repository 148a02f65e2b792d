package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

// runSandbox is cowfs run in its private mount namespace: it mounts the
// workspace, runs the command, and when it exits unmounts and closes
// the journal, returning the command's status.
func runSandbox(opts runOptions, argv []string) error {
	sig, err := relayedSignals()
	if err != nil {
		return err
	}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	ws := global.workspace
	if ws == "" {
		ws = wd
	}
	wd = commandDir(ws, wd)
	dopts, err := daemonOptions(opts.mountOptions, ws)
	if err != nil {
		return err
	}
	// The command is untrusted: nothing in the workspace raises its
	// privileges unless asked (cmd_run.go).
	dopts.NoSuid, dopts.NoDev = !opts.allowSuid, !opts.allowDev
	logf, err := openDaemonLog(ws)
	if err != nil {
		return err
	}
	defer logf.Close()
	dopts.Logger = daemonLogger(logf, opts.debug).With("run", os.Getpid())
	applyMemoryLimit(opts.memLimit)
	d, err := daemon.Start(dopts)
	if err != nil {
		return err
	}
	sandboxHangup.Store(d)
	for _, n := range d.Notes {
		fmt.Fprintf(os.Stderr, "cowfs: %s\n", n)
	}
	var ended *ctl.Turn
	status, err := supervise(d, opts, argv, wd, umask, sig, &ended)
	d.Stop()
	if werr := d.Wait(); err == nil {
		err = werr
	}
	if opts.json && (err == nil || status != 0) {
		if perr := printJSON(runResult{ExitCode: status, Turn: ended}); err == nil {
			err = perr
		}
	}
	if err != nil && status == 0 {
		return err
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cowfs run: %v\n", err) // the command's status wins
	}
	return exitStatus(status)
}

// relayedSignals returns the signals cowfs run relays for the command
// (cmd_run.go), kept until it runs: one that would end it means it
// never starts. Those this process receives itself are caught, so they
// do not end it, and dropped: cowfs run received them too — but for
// SIGHUP, which also reloads the daemon's TLS certificates. If cowfs
// run dies, the command gets SIGHUP, as when a terminal goes.
func relayedSignals() (chan os.Signal, error) {
	v := os.Getenv(sandboxEnv)
	os.Unsetenv(sandboxEnv)
	fd, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: started wrongly", sandboxEnv, v)
	}
	syscall.CloseOnExec(fd)
	relay := os.NewFile(uintptr(fd), "signals")
	direct := make(chan os.Signal, 16)
	signal.Notify(direct, forwarded...)
	go func() {
		for s := range direct {
			if s == syscall.SIGHUP {
				hangupSandbox() // sent to the daemon itself (listen.go)
			}
		}
	}()
	sig := make(chan os.Signal, 16)
	go func() {
		b := make([]byte, 1)
		for {
			if _, err := relay.Read(b); err != nil {
				sig <- syscall.SIGHUP
				return
			}
			sig <- syscall.Signal(b[0])
		}
	}()
	return sig, nil
}

// supervise runs the command, in one turn if asked, and returns its
// status. An error means what cowfs itself failed to do; with it the
// status is that of the command if it ran.
//
// Turns are scoped to the command — its process and every process
// descended from it (package agent) — unless --agent-* name another
// agent: the only other processes that can reach the mount are those
// that enter its mount namespace (nsenter, a debugger), which are a
// person's, not the command's. The scope is set, and the turn begun,
// once the command's process exists and before it runs a thing
// (runCommand holds it until then), so nothing it does escapes either.
//
// The turn, as it ended, is left in *ended.
func supervise(d *daemon.Daemon, opts runOptions, argv []string, wd string, umask int, sig chan os.Signal, ended **ctl.Turn) (int, error) {
	c := ctl.NewClient(d.Socket())
	began := false
	started := func(pid int) error {
		if opts.agent.empty() {
			if err := d.SetDefaultAgent(ctl.AgentScope{Pids: []uint32{uint32(pid)}}); err != nil {
				return err
			}
		}
		if !opts.turn {
			return nil
		}
		ctx, cancel := requestContext()
		defer cancel()
		if _, err := c.BeginTurn(ctx, ctl.BeginTurnRequest{ID: opts.id, Anchor: opts.anchor}); err != nil {
			return fmt.Errorf("beginning the turn: %w", err)
		}
		began = true
		return nil
	}
	status, err := runCommand(argv, wd, umask, sig, started)
	if began {
		// Also when the command failed: what it did is the turn's.
		ctx, cancel := requestContext()
		t, terr := c.EndTurn(ctx)
		cancel()
		if terr != nil {
			err = errors.Join(err, fmt.Errorf("ending the turn: %w", terr))
		} else {
			*ended = &t
		}
	}
	return status, err
}

// runCommand starts the command in a process group of its own,
// forwards signals to that group, and waits. When the command exits,
// what it left in its group is killed: the workspace is about to go.
// started is called with the command's pid before the command runs
// anything; if it fails, the command is killed unstarted.
func runCommand(argv []string, wd string, umask int, sig chan os.Signal, started func(pid int) error) (int, error) {
	select {
	case s := <-sig:
		if s != syscall.SIGWINCH {
			return 128 + int(s.(syscall.Signal)), nil
		}
	default:
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	ready, release, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer release.Close()
	cmd := exec.Command(exe, argv...)
	cmd.Env = append(os.Environ(), execEnv+"="+strconv.FormatInt(int64(umask), 8))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{ready}
	// The working directory by path, so it is the one in the mount, not
	// the backing directory this process may be in.
	cmd.Dir = wd
	// Pdeathsig fires when the thread that started the child ends: keep
	// it until the command has exited. If the sandbox dies, the command
	// does too, rather than work on through a dead mount.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	ready.Close()
	if err != nil {
		return 0, err
	}
	pgid := cmd.Process.Pid
	if err := started(pgid); err != nil {
		syscall.Kill(-pgid, syscall.SIGKILL)
		waitCommand(pgid, nil)
		return 0, err
	}
	tty := takeTerminal(pgid)
	release.Close() // the command may go on (run_exec.go)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sig:
				syscall.Kill(-pgid, s.(syscall.Signal))
			case <-done:
				return
			}
		}
	}()
	ws, err := waitCommand(pgid, tty)
	close(done)
	tty.giveBack()
	syscall.Kill(-pgid, syscall.SIGKILL)
	if err != nil {
		return 0, err
	}
	return statusOf(ws), nil
}

// commandDir is where the command starts: the current directory if it
// is in the workspace, else the workspace's root.
func commandDir(ws, wd string) string {
	abs, err := filepath.Abs(ws)
	if err != nil {
		return wd
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	if wd == abs || strings.HasPrefix(wd, abs+"/") || abs == "/" {
		return wd
	}
	return abs
}
