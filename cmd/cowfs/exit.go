package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/human"
)

// Exit codes, listed in the root command's help.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitNotRunning  = 3
	exitBusy        = 4
	exitNotFound    = 5
	exitOutOfWindow = 6
	exitConflict    = 7
	exitCannotMount = 8
	exitPartial     = 9
	exitForeign     = 10
)

const exitCodeHelp = `Exit codes:
  0  success
  1  error
  2  bad usage or bad request (an empty path, a TURN that reads as a number
     but is no turn number, an --agent-pid that is not running or an
     --agent-cgroup that does not exist)
  3  no daemon is running for the workspace
  4  busy: a turn is open (or another rollback runs); umount: processes
     still use the workspace (they are named); purge: a daemon serves the
     workspace
  5  not found: no such turn or path
  6  the turn has left the rollback window
  7  conflict: the request contradicts the state (no open turn, id in use)
  8  cannot mount: no /dev/fuse, not permitted, workspace missing or
     already mounted, journal locked; or refused: / or a system
     directory (also through a symlink, or beneath /proc, /sys, /dev),
     the journal or state inside the workspace or the mountpoint, a
     .cowfs cowfs did not make, a state or socket directory another
     user could change (a symlink on the way, someone else's, or
     writable by others); the --listen address or --tls-dir refused
  9  partial rollback: a step failed (no space, an I/O error); no marker
     was left and no turn reverted; run the same rollback again once the
     cause is gone, or 'cowfs unrevert' to undo what it did
 10  refused: the workspace's control socket is served by another user
     (neither root nor you); nothing was sent to it
Once its command has started, 'cowfs run' exits with the command's status
(128+N if signal N killed it).`

// usageError marks errors in how a command was called.
type usageError struct{ error }

func exitCode(err error) int {
	var ue usageError
	var ce codedError
	var status exitStatus
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ue), errors.Is(err, daemon.ErrEmptyPath),
		errors.Is(err, daemon.ErrNoProcess), errors.Is(err, daemon.ErrNoCgroup):
		return exitUsage
	case errors.Is(err, ctl.ErrNotRunning):
		return exitNotRunning
	case errors.Is(err, ctl.ErrForeignServer):
		return exitForeign
	case errors.Is(err, &ctl.Error{Code: ctl.CodeBadRequest}):
		return exitUsage
	case errors.Is(err, &ctl.Error{Code: ctl.CodeBusy}), errors.Is(err, daemon.ErrServed):
		return exitBusy
	case errors.Is(err, &ctl.Error{Code: ctl.CodeNotFound}):
		return exitNotFound
	case errors.Is(err, &ctl.Error{Code: ctl.CodeOutOfWindow}):
		return exitOutOfWindow
	case errors.Is(err, &ctl.Error{Code: ctl.CodeConflict}):
		return exitConflict
	case errors.Is(err, daemon.ErrNoFUSE), errors.Is(err, daemon.ErrNotPermitted),
		errors.Is(err, daemon.ErrNoWorkspace), errors.Is(err, daemon.ErrAlreadyMounted),
		errors.Is(err, daemon.ErrPlacement), errors.Is(err, daemon.ErrJournalLocked),
		errors.Is(err, daemon.ErrUnsafeDir), errors.Is(err, daemon.ErrListen):
		return exitCannotMount
	}
	return exitError
}

// exitStatus is a status to exit with and nothing to say: that of the
// command cowfs run ran.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// codedError carries an exit code decided elsewhere (by a background
// daemon that failed to start).
type codedError struct {
	error
	code int
}

func exactArgs(n int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("takes %s, got %d; see %s --help", human.Count(n, "argument", "arguments"), len(args), cmd.CommandPath())}
		}
		return nil
	}
}

// usageErrors makes cobra's own complaints about how cmd or one of its
// subcommands was called — the number of arguments, an unknown or
// malformed flag, a required flag missing — usage errors (exit 2), as
// the exit codes promise; cobra returns them as plain errors (exit 1).
func usageErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	if cmd.Runnable() {
		args := cmd.Args
		cmd.Args = func(c *cobra.Command, a []string) error {
			if args != nil {
				if err := args(c, a); err != nil {
					var ue usageError
					if errors.As(err, &ue) {
						return err
					}
					return usageError{err}
				}
			}
			// Flags are parsed by now; cobra would check this after
			// the arguments anyway.
			if err := c.ValidateRequiredFlags(); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageErrors(sub)
	}
}
