package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
)

func newUndoCommand() *cobra.Command {
	var opts rollbackOptions
	cmd := &cobra.Command{
		Use:   "undo",
		Short: "Roll back the latest turn",
		Long:  "Roll the workspace back to before the latest turn that is not rolled back already: 'cowfs rollback LATEST'.",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			var latest uint64
			err := call(func(ctx context.Context, c *ctl.Client) error {
				l, err := c.Turns(ctx)
				for _, t := range l.Turns {
					if t.State != ctl.StateReverted {
						latest = t.Num
					}
				}
				return err
			})
			if err != nil {
				return err
			}
			if latest == 0 {
				return &ctl.Error{Code: ctl.CodeNotFound, Message: "no turn to undo"}
			}
			return runRollback(opts, ctl.RollbackRequest{To: ctl.TurnRef(strconv.FormatUint(latest, 10)), DryRun: opts.dryRun, Force: opts.force})
		},
	}
	addRollbackFlags(cmd, &opts)
	cmd.Flags().BoolVarP(&opts.dryRun, "dry-run", "n", false, "print the plan and change nothing")
	return cmd
}

func newUnrevertCommand() *cobra.Command {
	var opts rollbackOptions
	cmd := &cobra.Command{
		Use:     "unrevert",
		Aliases: []string{"redo"},
		Short:   "Undo the last rollback",
		Long: `Put the workspace back as it was just before the last rollback, and withdraw
that rollback's marker. Possible until the next turn begins, which drops the
rolled-back turns for good. Paths changed since the rollback are skipped and
reported, unless --force.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res ctl.RollbackResult
			err := call(func(ctx context.Context, c *ctl.Client) (err error) {
				res, err = c.Unrevert(ctx, ctl.UnrevertRequest{Force: opts.force})
				return err
			})
			if err != nil {
				return err
			}
			return printRollback(opts, res)
		},
	}
	addRollbackFlags(cmd, &opts)
	return cmd
}

type markersOptions struct {
	json bool
}

func newMarkersCommand() *cobra.Command {
	var opts markersOptions
	cmd := &cobra.Command{
		Use:   "markers",
		Short: "List the conversation truncation markers rollbacks left",
		Long: `List the markers that stand: one per conversation point. A harness truncates
its conversation at a marker's anchor (the anchor of the turn rolled back to
before) and may add its note for the model. A rollback supersedes the markers
standing at or after its turn (the conversation from its anchor on is cut,
their notes with it) and says which ("replaces"); an unrevert puts them back.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			var l ctl.MarkerList
			err := call(func(ctx context.Context, c *ctl.Client) (err error) {
				l, err = c.Markers(ctx)
				return err
			})
			if err != nil {
				return err
			}
			if opts.json {
				return printJSON(l)
			}
			if len(l.Markers) == 0 {
				fmt.Println("no markers")
			}
			for _, m := range l.Markers {
				fmt.Printf("turn %d%s, %s\n  %s\n", m.Turn, idAnchor(m.ID, m.Anchor), when(m.CreatedAt), m.Note)
				for _, r := range m.Replaces {
					fmt.Printf("  replaces the marker of turn %d%s\n", r.Turn, idAnchor(r.ID, r.Anchor))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}
