package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

type purgeOptions struct {
	journal string
	stop    bool
	json    bool
}

func newPurgeCommand() *cobra.Command {
	var opts purgeOptions
	cmd := &cobra.Command{
		Use:   "purge [WORKSPACE]",
		Short: "Remove everything cowfs keeps for a workspace: journal, state, aside area",
		Long: `Remove the workspace's journal, its state directory and its private directory
(.cowfs, with the aside area), leaving the workspace's files as they are. Every
turn, marker and rollback of the workspace is gone afterwards.

Refused (exit code 4) while a daemon serves the workspace, while it is still a
cowfs mount, or while its journal is locked: run 'cowfs umount' first, or give
--stop, which asks the daemon to unmount and purge (DELETE /v1/journal) — still
refused while a turn is open or processes use the mount, which it names. Nothing
is followed on the way: a symlink anywhere in what is removed is removed, never
what it points to. A purge cut short can be run again to finish.

A journal --journal put elsewhere is found where the workspace's state
directory records it, and removed if it still holds a journal; give --journal
when the state directory is gone, or to remove what the record names anyway.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := workspaceArg(args); err != nil {
				return err
			}
			return runPurge(opts)
		},
	}
	cmd.Flags().StringVar(&opts.journal, "journal", "", "the journal directory (default: where the state directory records it)")
	cmd.Flags().BoolVar(&opts.stop, "stop", false, "if a daemon serves the workspace, stop it first (refused while a turn is open or processes use the mount)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print what was removed as JSON")
	return cmd
}

func runPurge(opts purgeOptions) error {
	loc, err := located()
	if err != nil {
		return err
	}
	var res daemon.PurgeResult
	if opts.stop && answers(loc.Socket()) {
		res, err = purgeServed(loc)
	} else {
		res, err = daemon.Purge(loc.Workspace, opts.journal)
	}
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(res)
	}
	if len(res.Removed) == 0 {
		fmt.Fprintf(os.Stderr, "cowfs: nothing to purge for %s\n", loc.Workspace)
		return nil
	}
	for _, p := range res.Removed {
		fmt.Printf("removed %s\n", p)
	}
	return nil
}

// purgeServed asks the daemon serving loc to stop and purge, and waits
// for it to exit.
func purgeServed(loc daemon.Location) (daemon.PurgeResult, error) {
	c := ctl.NewClient(loc.Socket())
	ctx, cancel := requestContext()
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return daemon.PurgeResult{}, err
	}
	p, err := c.Purge(ctx)
	if err != nil {
		return daemon.PurgeResult{Removed: p.Removed}, err
	}
	for start := time.Now(); !daemon.Exited(st.Pid); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			return daemon.PurgeResult{Removed: p.Removed}, fmt.Errorf("purged, but daemon %d has not exited after a minute", st.Pid)
		}
	}
	return daemon.PurgeResult{Removed: p.Removed}, nil
}
