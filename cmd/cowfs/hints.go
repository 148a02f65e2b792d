package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/human"
)

// hinted adds to err what to do about it, where the daemon could not
// say (it is not there): with no daemon for the workspace, the command
// that mounts it — the workspace cowfs ran on at or above the one
// named, if any — and, run without -w, how to name another.
func hinted(err error) error {
	if !errors.Is(err, ctl.ErrNotRunning) || global.command == "umount" || remote() {
		return err
	}
	path, here := global.workspace, global.workspace == ""
	if here {
		wd, werr := os.Getwd()
		if werr != nil {
			return err
		}
		path = wd
	}
	ws, ok := daemon.JournaledWorkspace(path)
	if !ok {
		loc, lerr := daemon.Locate(path)
		if lerr != nil {
			return err
		}
		ws = loc.Workspace
	}
	if !here {
		return fmt.Errorf("%w; to mount it: %s", err, daemon.MountCommand(ws))
	}
	return fmt.Errorf("%w; to mount %s: %s, or give -w WORKSPACE for another", err, human.Shown(ws), daemon.MountCommand(ws))
}
