package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/mcpserver"
)

func newMCPCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the workspace's history to an MCP client on stdio",
		Long: `Serve a Model Context Protocol server on standard input and output, for an
agent (Claude Code: claude mcp add cowfs -- cowfs mcp -w WORKSPACE) to see what
its turns changed and to roll them back. Tools: log, show, diff, cat, markers,
rollback_preview, rollback, undo, unrevert_preview, unrevert.

rollback, undo and unrevert are marked destructive, are refused while a turn
is open, and act only with the token their preview returned (refused if the
plan changed since) or with confirm: true. Errors come back as tool errors
with the daemon's message.

Each tool call talks to the workspace's daemon; with none running, it opens the
journal for the length of the call, as 'cowfs rollback' and the other offline
commands do.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error { return runMCP() },
	}
}

func runMCP() error {
	var loc daemon.Location
	if !remote() {
		var err error
		if loc, err = located(); err != nil {
			return err
		}
	}
	srv, err := mcpserver.New(mcpserver.Options{Dial: mcpDial(), Workspace: loc.Workspace, Version: version})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err = srv.ServeStdio(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// mcpDial reaches the workspace for one tool call: its daemon, found
// afresh each time (it may have been mounted or unmounted since the
// last), or else its journal opened for the call. Calls that open the
// journal take turns: it has one lock.
func mcpDial() mcpserver.Dial {
	var offlineMu sync.Mutex
	return func(ctx context.Context) (*ctl.Client, func(), error) {
		if remote() {
			c, err := remoteClient()
			return c, func() {}, err
		}
		loc, err := located()
		if err != nil {
			return nil, nil, err
		}
		if answers(loc.Socket()) {
			return ctl.NewClient(loc.Socket()), func() {}, nil
		}
		offlineMu.Lock()
		d, err := daemon.OpenOffline(daemon.Options{Workspace: loc.Workspace, Version: version})
		if errors.Is(err, daemon.ErrJournalLocked) {
			offlineMu.Unlock()
			return nil, nil, fmt.Errorf("no daemon answers, and another process holds the journal: %w; try again once it is done", err)
		}
		if err != nil {
			offlineMu.Unlock()
			return nil, nil, err
		}
		for _, n := range d.Notes {
			fmt.Fprintf(os.Stderr, "cowfs mcp: %s\n", n) // stdout is the protocol's
		}
		return ctl.NewClient(d.Socket()), func() { d.Close(); offlineMu.Unlock() }, nil
	}
}
