package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/daemon"
)

type purgeOptions struct {
	journal string
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
cowfs mount, or while its journal is locked: run 'cowfs umount' first. Nothing
is followed on the way: a symlink anywhere in what is removed is removed, never
what it points to. A purge cut short can be run again to finish.

Give --journal if the workspace was mounted with --journal.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				global.workspace = args[0]
			}
			return runPurge(opts)
		},
	}
	cmd.Flags().StringVar(&opts.journal, "journal", "", "the journal directory, if the workspace was mounted with --journal")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print what was removed as JSON")
	return cmd
}

func runPurge(opts purgeOptions) error {
	loc, err := located()
	if err != nil {
		return err
	}
	res, err := daemon.Purge(loc.Workspace, opts.journal)
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
