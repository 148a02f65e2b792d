package daemon

import (
	"errors"
	"fmt"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
	"github.com/cowfs/cowfs/journal"
)

// # Saying what to do
//
// A refusal is read by a person who did not cause it — a turn left open
// by a harness that crashed, a daemon started by someone else — so it
// ends with the command that mends it, the workspace named with -w, to
// be pasted as it is from wherever that person is.

// EndTurnCommand is the command that ends the open turn of the
// workspace ws, with or without a daemon.
func EndTurnCommand(ws string) string { return human.ShellCommand("cowfs", "turn", "end", "-w", ws) }

// UmountCommand is the command that unmounts the workspace ws.
func UmountCommand(ws string) string { return human.ShellCommand("cowfs", "umount", "-w", ws) }

// MountCommand is the command that mounts the workspace ws in the
// background.
func MountCommand(ws string) string { return human.ShellCommand("cowfs", "mount", "-d", "-w", ws) }

// turnOpen is the refusal of what needs no open turn (what it is
// about to do, "rolling back") while turn n is open.
func (d *Daemon) turnOpen(n uint64, doing string) error {
	return ctl.Errorf(ctl.CodeBusy, "%v: turn %d; end it before %s: %s", journal.ErrBusy, n, doing, EndTurnCommand(d.opts.Workspace))
}

// openTurnRefusal returns err, a failure of what needs no open turn,
// as turnOpen if it failed because a turn is open.
func (d *Daemon) openTurnRefusal(err error, doing string) error {
	if !errors.Is(err, journal.ErrBusy) {
		return err
	}
	if t, open := d.j.OpenTurn(); open {
		return d.turnOpen(t.Num, doing)
	}
	return err
}

// served is the refusal of what needs the workspace's daemon stopped,
// while the daemon pid (0: unknown) serves it.
func served(ws string, pid int) error {
	who := ""
	if pid != 0 {
		who = fmt.Sprintf(" (pid %d)", pid)
	}
	return fmt.Errorf("%w%s; unmount it first: %s", ErrServed, who, UmountCommand(ws))
}

// JournaledWorkspace returns the workspace at or above path that has a
// journal — one cowfs has run on — if there is one.
func JournaledWorkspace(path string) (string, bool) {
	loc, _, err := findJournal(path)
	return loc.Workspace, err == nil
}
