package main

import "github.com/cowfs/cowfs/ctl"

// What the commands whose work is not a request's reply print with
// --json (the others print the reply, a ctl type).

// umountResult is what cowfs umount --json prints once it is done.
type umountResult struct {
	Workspace  string `json:"workspace"`
	Mountpoint string `json:"mountpoint,omitempty"`
	Pid        int    `json:"pid,omitempty"` // the daemon's
	// State is "unmounted"; "detached" (--lazy: processes still use the
	// mount, and the daemon exits when they let go); or "cleared" (no
	// daemon answered: the stale mount one left behind was cleared).
	State string `json:"state"`
}

// Values of umountResult.State.
const (
	umountUnmounted = "unmounted"
	umountDetached  = "detached"
	umountCleared   = "cleared"
)

// runResult is what cowfs run --json prints after its command's own
// output, last on standard output.
type runResult struct {
	// ExitCode is cowfs run's: the command's status, or 128+N if
	// signal N killed it.
	ExitCode int `json:"exit_code"`
	// Turn is the turn --turn ran the command in, as it ended.
	Turn *ctl.Turn `json:"turn,omitempty"`
}

// printIf prints v as JSON if asked to.
func printIf(asked bool, v any) error {
	if !asked {
		return nil
	}
	return printJSON(v)
}
