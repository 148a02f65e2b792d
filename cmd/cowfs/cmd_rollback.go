package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

type rollbackOptions struct {
	dryRun, force, json, verbose bool
}

func newRollbackCommand() *cobra.Command {
	var opts rollbackOptions
	cmd := &cobra.Command{
		Use:   "rollback TURN",
		Short: "Put the workspace back as it was when a turn began",
		Long: `Roll the workspace back to its state when TURN (a number, or the harness's id)
began: files modified since get their old content and attributes, deleted files
and renamed paths come back, created files go, and directories created since
are removed once empty. Paths changed outside turns since TURN began are
skipped and reported, unless --force. Refused while a turn is open.

The rollback leaves a conversation truncation marker (see 'cowfs markers'), and
can be undone with 'cowfs unrevert' until the next turn begins.

A step that fails for another reason than a conflict (an immutable file, an I/O
error, no space to journal) stops the rollback: it is partial (exit 9), leaves
no marker, and waits. Run the same rollback again: it goes on from that step,
and a path that fails again is skipped and reported ("failed, skipped on
retry"), its change left in effect, so one such path never blocks the rest.
Only a journal that cannot record stops a retry again.

Skipped changes are retried: they stay the turn's, and the next rollback that
covers them undoes them once the cause is gone (the failure, or the change
outside the turns, put back by whoever made it), without --force; it lists
those paths as retried.

Pages written through shared mappings are written back before the rollback
plans, so those writes count as changes outside turns. A write through a
mapping made during the rollback is refused if it would bring back bytes from
before the restore; the path's note says so.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTurnRefs(args[0]); err != nil {
				return err
			}
			return runRollback(opts, ctl.RollbackRequest{To: ctl.TurnRef(args[0]), DryRun: opts.dryRun, Force: opts.force})
		},
	}
	addRollbackFlags(cmd, &opts)
	cmd.Flags().BoolVarP(&opts.dryRun, "dry-run", "n", false, "print the plan and change nothing")
	return cmd
}

func addRollbackFlags(cmd *cobra.Command, opts *rollbackOptions) {
	cmd.Flags().BoolVar(&opts.force, "force", false, "also restore paths changed outside turns")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&opts.verbose, "verbose", "v", false, "list every path, not only those skipped")
}

func runRollback(opts rollbackOptions, req ctl.RollbackRequest) error {
	var res ctl.RollbackResult
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		res, err = c.Rollback(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	return printRollback(opts, res)
}

// errPartial is the exit of a rollback that did not finish.
var errPartial = codedError{fmt.Errorf("the rollback did not finish; nothing was marked: run the same rollback again (it retries the failed step, and skips and reports it if it fails again), or undo what it did with 'cowfs unrevert'"), exitPartial}

func printRollback(opts rollbackOptions, res ctl.RollbackResult) error {
	if opts.json {
		if err := printJSON(res); err != nil {
			return err
		}
		if !res.Complete {
			return errPartial
		}
		return nil
	}
	fmt.Println(rollbackSummary(res))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, p := range res.Paths {
		if opts.verbose || res.DryRun || p.Action == ctl.ActionSkip || p.Note != "" || p.Retried {
			reason := ""
			switch {
			case p.Reason != "":
				reason = "\t(" + human.Shown(p.Reason) + ")"
			case p.Note != "":
				reason = "\t(" + human.Shown(p.Note) + ")"
			case p.Retried:
				reason = "\t(retried: an earlier rollback skipped it)"
			case p.From != "":
				reason = "\t(renamed back from " + shownPath(p.From) + ")"
			case p.To != "":
				reason = "\t(renamed back to " + shownPath(p.To) + ")"
			}
			fmt.Fprintf(w, "  %s\t%s%s\t%s\n", p.Action, shownPath(p.Path), slashIfDir(p.Type), reason)
		}
	}
	w.Flush()
	if m := res.Marker; m != nil {
		fmt.Printf("marker: turn %d%s\n  %s\n", m.Turn, idAnchor(m.ID, m.Anchor), m.Note)
	}
	if !res.Complete {
		return errPartial
	}
	return nil
}

// rollbackSummary is the one-line account of a rollback.
func rollbackSummary(res ctl.RollbackResult) string {
	c := res.Counts
	verb := "Rolled back"
	switch {
	case !res.Complete:
		return fmt.Sprintf("PARTIAL rollback to before turn %d: stopped at a failure: %s\n  done so far: %d restored, %d recovered, %d deleted; %s not done or skipped",
			res.Target, human.Shown(res.Failure), c.Restored, c.Recovered, c.Deleted, human.Count(c.Skipped, "path", "paths"))
	case res.DryRun:
		verb = "Would roll back"
	case res.Unrevert:
		return fmt.Sprintf("Unreverted the rollback to before turn %d: %d restored, %d recovered, %d deleted, %d skipped%s",
			res.Target, c.Restored, c.Recovered, c.Deleted, c.Skipped, dirCounts(c))
	}
	return fmt.Sprintf("%s to before turn %d: %d restored, %d recovered, %d deleted, %d skipped%s",
		verb, res.Target, c.Restored, c.Recovered, c.Deleted, c.Skipped, dirCounts(c))
}

func dirCounts(c ctl.RollbackCounts) string {
	var parts []string
	if c.DirsRemoved > 0 {
		parts = append(parts, fmt.Sprintf("%d empty %s removed", c.DirsRemoved, human.Plural(c.DirsRemoved, "directory", "directories")))
	}
	if c.DirsRecreated > 0 {
		parts = append(parts, fmt.Sprintf("%d %s recreated", c.DirsRecreated, human.Plural(c.DirsRecreated, "directory", "directories")))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

func slashIfDir(typ string) string {
	if typ == "dir" {
		return "/"
	}
	return ""
}
