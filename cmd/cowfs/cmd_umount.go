package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/human"
)

type umountOptions struct {
	force bool
	lazy  bool
	json  bool
}

func newUmountCommand() *cobra.Command {
	var opts umountOptions
	cmd := &cobra.Command{
		Use:   "umount [WORKSPACE]",
		Short: "Unmount a workspace and stop its daemon",
		Long: `Ask the workspace's daemon to unmount and exit, and wait until it has.

If processes still use the workspace (a shell whose working directory is in
it, an open file), say which at once, with their pids and commands, and leave
it mounted (exit 4). With --lazy, detach it now instead: it vanishes from the
filesystem tree, the processes still in it keep working (still journaled),
and the daemon closes the journal and exits when the last of them lets go.
The command itself may run from inside the workspace.

If no daemon answers, clear a stale mount left by one that died. With --force,
a daemon that does not answer within a few seconds (stopped, or hung) is cut
off: its FUSE connection is aborted (/sys/fs/fuse/connections/N/abort, with
fusectl mounted for it if need be) — whatever waits on the mount fails with
ENOTCONN — and the mount is detached; the daemon's process is named, to be
ended (it holds the journal until it exits). Without --force, a daemon that is
slow to answer is waited for, and after a while the wait says so.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := workspaceArg(args); err != nil {
				return err
			}
			return runUmount(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.force, "force", false, "detach the mount even if its daemon does not answer: abort its FUSE connection")
	cmd.Flags().BoolVar(&opts.lazy, "lazy", false, "detach a busy mount now; the daemon finishes when the last process using it lets go")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print what was done as JSON")
	return cmd
}

func runUmount(opts umountOptions) error {
	c, loc, err := client()
	if err != nil {
		return err
	}
	// Run from inside the workspace, this command would hold the mount
	// itself.
	if err := os.Chdir("/"); err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	st, err := umountStatus(ctx, c, loc, opts.force)
	if errors.Is(err, errNoAnswer) {
		return abortHung(loc)
	}
	if errors.Is(err, ctl.ErrNotRunning) {
		cleared, uerr := daemon.Unmount(loc.Workspace, opts.force)
		if uerr != nil {
			return uerr
		}
		if cleared {
			fmt.Fprintf(os.Stderr, "cowfs: cleared the mount of %s; its daemon was gone\n", loc.Workspace)
			return printIf(opts.json, umountResult{Workspace: loc.Workspace, State: umountCleared})
		}
		return err
	}
	if err != nil {
		return err
	}
	m, isMounted := daemon.CowfsMount(st.Mountpoint)
	if isMounted && !opts.lazy {
		if hs := m.Holders(); len(hs) > 0 {
			return busyError(loc.Workspace, st.Mountpoint, hs, false)
		}
	}
	if err := c.Shutdown(ctx); err != nil {
		return err
	}
	// The daemon removes its socket once it has unmounted and closed
	// the journal, then exits. If processes still use the mount — with
	// --lazy, or one that came in after the check above — it detached
	// it and stays until they let go: say who they are.
	var scanned time.Time
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(loc.Socket())
		if errors.Is(err, os.ErrNotExist) && daemon.Exited(st.Pid) {
			fmt.Fprintf(os.Stderr, "cowfs: unmounted %s\n", st.Mountpoint)
			return printIf(opts.json, umountResult{Workspace: loc.Workspace, Mountpoint: st.Mountpoint, Pid: st.Pid, State: umountUnmounted})
		}
		if time.Since(start) > time.Minute {
			return fmt.Errorf("daemon %d has not exited after a minute; see its log, %s", st.Pid, loc.Log())
		}
		// Unmounted (or detached) a moment ago and the daemon not gone:
		// look for holders, now and then (it reads all of /proc).
		if !isMounted || m.Attached() || time.Since(start) < 200*time.Millisecond || time.Since(scanned) < time.Second {
			continue
		}
		scanned = time.Now()
		hs := m.Holders()
		if len(hs) == 0 {
			continue // the last one just left; the daemon is finishing
		}
		if !opts.lazy {
			return busyError(loc.Workspace, st.Mountpoint, hs, true)
		}
		fmt.Fprintf(os.Stderr, "cowfs: detached %s; daemon %d closes the journal and exits when these processes let go:\n%s",
			st.Mountpoint, st.Pid, holderLines(hs))
		return printIf(opts.json, umountResult{Workspace: loc.Workspace, Mountpoint: st.Mountpoint, Pid: st.Pid, State: umountDetached})
	}
}

// A daemon that hangs never answers: umount --force gives it
// forceAnswerWait, then cuts it off; a plain umount waits, and says
// after slowAnswer what --force would do.
const (
	forceAnswerWait = 3 * time.Second
	slowAnswer      = 10 * time.Second
)

// errNoAnswer: the daemon did not answer in time.
var errNoAnswer = errors.New("the daemon did not answer")

// umountStatus asks the daemon of loc for its status, for umount.
func umountStatus(ctx context.Context, c *ctl.Client, loc daemon.Location, force bool) (ctl.Status, error) {
	if !force {
		note := time.AfterFunc(slowAnswer, func() {
			fmt.Fprintf(os.Stderr, "cowfs: the daemon of %s has not answered for %v; it may be busy (a long rollback) or hang (stopped?): '%s' cuts it off\n",
				human.Shown(loc.Workspace), slowAnswer, human.ShellCommand("cowfs", "umount", "--force", "-w", loc.Workspace))
		})
		defer note.Stop()
		return c.Status(ctx)
	}
	sctx, cancel := context.WithTimeout(ctx, forceAnswerWait)
	defer cancel()
	st, err := c.Status(sctx)
	if err != nil && sctx.Err() != nil && ctx.Err() == nil {
		return st, fmt.Errorf("%w in %v: %v", errNoAnswer, forceAnswerWait, err)
	}
	return st, err
}

// abortHung cuts off the daemon of loc, which does not answer: its FUSE
// connection aborted, its mount detached (daemon.Abort).
func abortHung(loc daemon.Location) error {
	a, err := daemon.Abort(loc.Workspace)
	if err != nil {
		return fmt.Errorf("the daemon of %s did not answer in %v, and cutting it off failed: %w", human.Shown(loc.Workspace), forceAnswerWait, err)
	}
	who := "its daemon"
	if a.Pid != 0 {
		who = fmt.Sprintf("its daemon (pid %d)", a.Pid)
	}
	fmt.Fprintf(os.Stderr, "cowfs: %s did not answer in %v: aborted FUSE connection %d and detached %s; whatever still used it gets ENOTCONN\n",
		who, forceAnswerWait, a.Connection, human.Shown(a.Mountpoint))
	if a.Pid != 0 {
		fmt.Fprintf(os.Stderr, "cowfs: daemon %d holds the journal until it exits: if it was stopped, 'kill -CONT %d' lets it finish and exit; if it hangs, 'kill -KILL %d' ends it (the journal survives a kill)\n", a.Pid, a.Pid, a.Pid)
	}
	return nil
}

// busyError says who keeps the mountpoint busy, and what to do.
func busyError(ws, mnt string, hs []daemon.Holder, detached bool) error {
	what := "nothing was unmounted"
	if detached {
		what = "they came in as it was unmounted: it is detached, and the daemon exits when they let go"
	}
	return codedError{fmt.Errorf("%s is in use; %s:\n%sleave it (cd elsewhere) or end them and run '%s' again, or '%s' to detach it now",
		mnt, what, holderLines(hs), daemon.UmountCommand(ws), human.ShellCommand("cowfs", "umount", "--lazy", "-w", ws)), exitBusy}
}

// holderLines lists holders, one a line, names escaped.
func holderLines(hs []daemon.Holder) string {
	var b strings.Builder
	for _, h := range hs {
		var uses []string
		for _, u := range h.Uses {
			uses = append(uses, u.What+" "+human.Shown(u.Path))
		}
		if h.More > 0 {
			uses = append(uses, fmt.Sprintf("and %d more", h.More))
		}
		fmt.Fprintf(&b, "  pid %d (%s): %s\n", h.Pid, human.Shown(h.Command), strings.Join(uses, "; "))
	}
	return b.String()
}
