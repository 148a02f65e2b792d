package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

// cowfs run works in three processes, each for a reason:
//
//   - the command the user ran stays in the host's mount namespace and
//     only waits: a Go program is multithreaded from its first
//     instruction, and a thread cannot leave the namespace the others
//     share (unshare(CLONE_NEWNS) would move one thread, and the
//     daemon reaches its mountpoint by path from any thread). So it
//     starts itself again, the sandbox, with Unshareflags CLONE_NEWNS,
//     which the child applies between fork and exec — single-threaded —
//     and then marks / MS_PRIVATE|MS_REC so no mount crosses either
//     way. It relays signals to the sandbox, reaps orphans if it is
//     pid 1 (in a container), and exits with the sandbox's status.
//   - the sandbox (run_sandbox.go) is an ordinary daemon mounted in the
//     private namespace — only it and its children see the journaled
//     view; the host keeps seeing the backing directory — serving the
//     control socket, which lives in the state directory and so is
//     reachable from the host. It runs the command, forwards signals to
//     its process group, and when it exits unmounts and closes the
//     journal.
//   - the command starts as cowfs again (run_exec.go), which waits
//     until the sandbox has handed it the terminal, restores the umask
//     the daemon had to clear, and execs the command.

// runOptions are cowfs run's flags.
type runOptions struct {
	mountOptions
	turn       bool
	id, anchor string
	// allowSuid and allowDev lift the nosuid and nodev the view is
	// mounted with.
	allowSuid, allowDev bool
}

// sandboxEnv marks the process cowfs run starts in the private mount
// namespace.
const sandboxEnv = "COWFS_RUN_SANDBOX"

// forwarded are the signals cowfs run passes on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGWINCH, syscall.SIGUSR1, syscall.SIGUSR2}

func newRunCommand() *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run [-w WORKSPACE] [flags] -- COMMAND [ARGS...]",
		Short: "Run a command on a journaled workspace only it can see",
		Long: `Mount cowfs over the workspace (-w, default: the current directory) in a
private mount namespace and run COMMAND there: COMMAND and its children see the
journaled view, everything else keeps seeing the workspace as it is. COMMAND
starts in the current directory if it is inside the workspace, else in the
workspace's root. Standard input, output, error and the terminal are COMMAND's;
SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGUSR1 and SIGUSR2 are forwarded
to its process group; ^Z stops it and cowfs run, as a shell's job. The control
socket serves while it runs, for a harness to begin and end turns and roll
back.

With --turn the whole command is one turn, begun before it starts and ended
after it exits, whatever its status: a one-shot agent gets a turn per run. It
is ended however the run ends: the command fails, a signal kills it, cowfs run
is sent SIGTERM, SIGINT or SIGHUP (forwarded to the command), the command
cannot be started (126, 127); if the sandbox process itself is killed, cowfs
run ends the turn without a daemon. (Only if cowfs run is killed as well is it
left open: 'cowfs turn end -w WORKSPACE' ends it, with or without a daemon.)

Turns are COMMAND's: a change made during a turn by a process that is not
COMMAND or descended from it (one that entered the namespace with nsenter,
say) is not the turn's, and rollbacks leave it alone unless forced. A turn
begun with its own --agent-* scope, or cowfs run's --agent-uid, --agent-pid
and --agent-cgroup, name the agent instead.

COMMAND gets standard input, output and error and no other descriptor: none
of cowfs's, none cowfs run inherited. The workspace is mounted nosuid and
nodev, so no file in it raises COMMAND's privileges: set-user-ID and
set-group-ID bits and file capabilities of programs in it do not take effect,
and its device nodes cannot be opened (EACCES). --allow-suid and --allow-dev
lift each, as far as the backing filesystem allows.

When COMMAND exits, processes it left in its process group are killed, the
workspace is unmounted and the journal closed; cowfs run exits with COMMAND's
status, or 128+N if signal N killed it (127: no such command, 126: cannot run
it). Before COMMAND starts, cowfs run fails with cowfs's own exit codes (see
cowfs --help). Changes the host makes to the workspace meanwhile bypass the
journal: they are found at turn boundaries and rollbacks never undo them unless
forced. After the run, 'cowfs log', 'rollback' and the other commands that
read history work on the journal without a daemon.

With --json, once COMMAND has exited and the workspace is unmounted, cowfs run
prints {"exit_code": N, "turn": {...}} (the turn with --turn, as 'cowfs turn
end --json' prints it) on standard output, after all COMMAND wrote there.

` + listenHelp + ` (For cowfs run that pid is the sandbox's: SIGHUP to cowfs run
itself goes to COMMAND.)

Needs root (CAP_SYS_ADMIN) and /dev/fuse.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (opts.id != "" || opts.anchor != "") && !opts.turn {
				return usageError{errors.New("--id and --anchor label the turn --turn begins")}
			}
			if err := checkTurnID(opts.id); err != nil {
				return err
			}
			// Before the sandbox starts, so a bad --listen is a usage
			// error and nothing runs.
			if err := opts.remote.options(&daemon.Options{}); err != nil {
				return err
			}
			if os.Getenv(sandboxEnv) != "" {
				return runSandbox(opts, args)
			}
			return runRun(opts)
		},
	}
	// Flags end at COMMAND: cowfs run ls -la works without "--".
	cmd.Flags().SetInterspersed(false)
	addDaemonFlags(cmd, &opts.mountOptions)
	cmd.Flags().BoolVar(&opts.turn, "turn", false, "run the command as one turn")
	cmd.Flags().StringVar(&opts.id, "id", "", "with --turn: the harness's id for the turn")
	cmd.Flags().StringVar(&opts.anchor, "anchor", "", "with --turn: the turn's conversation anchor")
	cmd.Flags().BoolVar(&opts.allowSuid, "allow-suid", false, "let set-user-ID and set-group-ID bits and file capabilities in the workspace take effect (default: nosuid)")
	cmd.Flags().BoolVar(&opts.allowDev, "allow-dev", false, "let device nodes in the workspace be opened (default: nodev)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "when the command exits, print cowfs run's exit code and the --turn turn as JSON, last on standard output")
	return cmd
}

// runRun starts the sandbox, this command again in a private mount
// namespace, and waits for it.
func runRun(opts runOptions) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, forwarded...)
	relay, relayW, err := os.Pipe()
	if err != nil {
		return err
	}
	sb := exec.Command(exe, os.Args[1:]...)
	sb.Env = append(os.Environ(), sandboxEnv+"=3")
	sb.Stdin, sb.Stdout, sb.Stderr = os.Stdin, os.Stdout, os.Stderr
	sb.ExtraFiles = []*os.File{relay}
	sb.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	started := time.Now()
	err = sb.Start()
	relay.Close()
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("%w: a private mount namespace needs CAP_SYS_ADMIN (root; in a container --cap-add SYS_ADMIN): %v", daemon.ErrNotPermitted, err)
		}
		return err
	}
	pid := sb.Process.Pid
	// Signals go to the sandbox as bytes on a pipe, not as signals: a
	// signal sent to this process's group reaches the sandbox too, and
	// the command must get it once. The sandbox relays what comes
	// through the pipe and drops what it receives itself.
	go func() {
		for s := range sig {
			relayW.Write([]byte{byte(s.(syscall.Signal))})
		}
	}()
	ws, err := reap(pid)
	if err != nil {
		return err
	}
	if ws.Signaled() {
		fmt.Fprintf(os.Stderr, "cowfs run: the sandbox was killed by %v\n", ws.Signal())
		if opts.turn {
			endOrphanTurn(opts, started)
		}
	}
	return exitStatus(statusOf(ws))
}

// endOrphanTurn ends the turn a sandbox killed (by the OOM killer, say)
// left open, without a daemon: the sandbox ends its turn on every way
// the command can end, but not on its own death. The turn is the
// sandbox's if it is open and began after the sandbox started, with
// the --id asked for: the sandbox held the journal's lock from before
// its turn began until it died, so nobody else began one meanwhile.
func endOrphanTurn(opts runOptions, started time.Time) {
	err := callFor(true, func(ctx context.Context, c *ctl.Client) error {
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		t := st.OpenTurn
		if t == nil || t.BeganAt.Before(started) || (opts.id != "" && t.ID != opts.id) {
			return nil
		}
		if _, err := c.EndTurn(ctx); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "cowfs run: ended turn %d, which the sandbox had begun\n", t.Num)
		return nil
	})
	if err != nil {
		ws := global.workspace
		if ws == "" {
			ws, _ = os.Getwd()
		}
		fmt.Fprintf(os.Stderr, "cowfs run: the turn the sandbox began may still be open (%v); %s ends it\n", err, daemon.EndTurnCommand(ws))
	}
}

// reap waits for pid, and for any other child on the way: in a
// container cowfs run is pid 1, and the orphans of the command's
// processes become its children.
func reap(pid int) (syscall.WaitStatus, error) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return ws, fmt.Errorf("waiting for the sandbox: %w", err)
		}
		if got == pid {
			return ws, nil
		}
	}
}

// statusOf is the shell's status for a wait status: the exit code, or
// 128+N for a process killed by signal N.
func statusOf(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
