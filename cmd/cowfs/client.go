package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

// located finds the workspace named by -w (or the current directory).
func located() (daemon.Location, error) {
	ws := global.workspace
	if ws == "" {
		var err error
		if ws, err = os.Getwd(); err != nil {
			return daemon.Location{}, err
		}
	}
	return daemon.Find(ws)
}

// offlineCommands work when no daemon serves the workspace: they open
// its journal in-process (daemon.OpenOffline) and talk to it over a
// private socket, through the same client calls as to a daemon.
var offlineCommands = map[string]bool{
	"log": true, "show": true, "diff": true, "cat": true, "rollback": true,
	"undo": true, "unrevert": true, "markers": true,
}

// offline is the workspace opened without a daemon for this command,
// once one needed it; main closes it.
var offline *daemon.Daemon

// client returns a control-socket client for the workspace: its
// daemon's (a remote one with --remote), or, for an offline command when none answers, that of the
// workspace opened in-process.
func client() (*ctl.Client, daemon.Location, error) {
	return clientFor(offlineCommands[global.command])
}

// clientFor is client for a command that works without a daemon if
// offlineOK.
func clientFor(offlineOK bool) (*ctl.Client, daemon.Location, error) {
	if remote() {
		// No location here: the workspace is on the daemon's machine.
		c, err := remoteClient()
		return c, daemon.Location{}, err
	}
	loc, err := located()
	if err != nil {
		return nil, loc, err
	}
	if !offlineOK || answers(loc.Socket()) {
		return ctl.NewClient(loc.Socket()), loc, nil
	}
	if offline == nil {
		d, err := daemon.OpenOffline(daemon.Options{Workspace: loc.Workspace, Version: version})
		if errors.Is(err, daemon.ErrJournalLocked) {
			return nil, loc, codedError{fmt.Errorf("no daemon answers, and another process holds the journal: %w; try again once it is done", err), exitBusy}
		}
		if err != nil {
			return nil, loc, err
		}
		for _, n := range d.Notes {
			fmt.Fprintf(os.Stderr, "cowfs: %s\n", n)
		}
		offline = d
	}
	loc.Workspace = offline.Workspace()
	return ctl.NewClient(offline.Socket()), loc, nil
}

// answers reports whether something listens on the socket at path. A
// socket it cannot tell about counts as answering: the request then
// says what is wrong.
func answers(path string) bool {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err == nil {
		c.Close()
		return true
	}
	return !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED)
}

// call runs fn with a client for the workspace and a bounded context.
func call(fn func(ctx context.Context, c *ctl.Client) error) error {
	return callFor(offlineCommands[global.command], fn)
}

// callFor is call for a command that works without a daemon if
// offlineOK.
func callFor(offlineOK bool, fn func(ctx context.Context, c *ctl.Client) error) error {
	c, _, err := clientFor(offlineOK)
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	return fn(ctx, c)
}

// requestContext bounds a control request.
func requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Minute)
}

// printJSON writes v as indented JSON to stdout.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// when formats a time for tables.
func when(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }
