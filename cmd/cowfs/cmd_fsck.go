package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/human"
)

type fsckOptions struct {
	json   bool
	export string
}

func newFsckCommand() *cobra.Command {
	var opts fsckOptions
	cmd := &cobra.Command{
		Use:   "fsck [WORKSPACE]",
		Short: "Check that everything the workspace's journal holds can be read",
		Long: `Read everything the workspace's journal holds — turns, markers, rollbacks and
their plans, every record, every byte of pre-image content, every inode kept
aside in the workspace's private directory — and list what cannot be read.
It changes nothing, and needs no daemon: run 'cowfs umount' first (exit 4
while a daemon holds the journal). Exit 0 if everything reads, 1 if not; a
journal that cannot be opened at all says so.

With --export DIR it also writes what the journal holds into DIR (new or
empty, outside the workspace, made 0700): markers.json, turns.json, and, for
every path a turn in the window changed, what it held when the latest turn
that changed it began — the newest state a rollback could restore — in
index.json, with each file's content in DIR/files. What cannot be read is
listed there with the reason, and counts as a problem.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := workspaceArg(args); err != nil {
				return err
			}
			return runFsck(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&opts.export, "export", "", "also write what the journal holds into `DIR` (markers, turns, the newest restorable version of each path)")
	return cmd
}

func runFsck(opts fsckOptions) error {
	loc, err := located()
	if err != nil {
		return err
	}
	r, err := daemon.Check(loc.Workspace)
	if errors.Is(err, daemon.ErrJournalLocked) {
		return journalInUse(loc, err)
	}
	if err != nil {
		return err
	}
	if opts.json {
		if err := printJSON(r); err != nil {
			return err
		}
	} else {
		fmt.Printf("%s: journal %s\n  %s, %s, %s of pre-image content, %s\n",
			r.Workspace, r.Journal, human.Count(r.Turns, "turn", "turns"), human.Count(r.Records, "record", "records"), human.Bytes(r.Content), human.Count(len(r.Markers), "marker", "markers"))
		for _, p := range r.Problems {
			fmt.Printf("  problem: %s\n", human.Shown(p))
		}
	}
	unreadable := 0
	if opts.export != "" {
		x, err := daemon.Export(loc.Workspace, opts.export)
		if errors.Is(err, daemon.ErrJournalLocked) {
			return journalInUse(loc, err)
		}
		if err != nil {
			return err
		}
		unreadable = x.Unreadable
		if !opts.json {
			fmt.Printf("  exported %s, %s and %s (%d unreadable) to %s\n",
				human.Count(x.Markers, "marker", "markers"), human.Count(x.Turns, "turn", "turns"), human.Count(len(x.Paths), "path", "paths"), x.Unreadable, x.Dir)
		}
	}
	if len(r.Problems) > 0 || unreadable > 0 {
		return codedError{fmt.Errorf("%s: what they name cannot be restored", human.Count(len(r.Problems)+unreadable, "problem", "problems")), exitError}
	}
	return nil
}

// journalInUse says what to do when fsck finds the journal locked, err:
// unmount the workspace if a daemon serves it, else wait for the
// command that holds it.
func journalInUse(loc daemon.Location, err error) error {
	if answers(loc.Socket()) {
		return codedError{fmt.Errorf("%s is mounted, and its daemon holds the journal (%w); fsck reads it unmounted: %s, then fsck again",
			human.Shown(loc.Workspace), err, daemon.UmountCommand(loc.Workspace)), exitBusy}
	}
	return codedError{fmt.Errorf("%w; another cowfs command is using it: try again once it is done", err), exitBusy}
}
