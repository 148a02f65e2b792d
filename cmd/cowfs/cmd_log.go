package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

type logOptions struct {
	json bool
	wide bool
}

func newLogCommand() *cobra.Command {
	var opts logOptions
	cmd := &cobra.Command{
		Use:   "log",
		Short: "List the turns in the rollback window",
		Long: `List the turns in the rollback window, oldest first: number, the harness's id
and anchor, state, when it began, the paths it changed and the bytes it
journaled. PATHS shows "(+N)" when processes that are not the turn's agent
changed N more paths during it.

The table fits 100 columns: an id or anchor longer than 14 characters is
shortened to its start and end around an ellipsis (0f8fad5b…8950e); --wide
prints them whole, and --json gives every field exactly. A turn is named by
its number or its whole id, never by a shortened one.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error { return runLog(opts) },
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&opts.wide, "wide", false, "print ids and anchors whole, however wide the table")
	return cmd
}

func runLog(opts logOptions) error {
	var l ctl.TurnList
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		l, err = c.Turns(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(l)
	}
	label := shortLabel
	if opts.wide {
		label = human.Shown
	}
	if len(l.Turns) == 0 {
		fmt.Println("no turns yet")
	} else {
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TURN\tID\tANCHOR\tSTATE\tBEGAN\tPATHS\tJOURNAL")
		others := false
		for _, t := range l.Turns {
			paths := fmt.Sprint(t.ChangedPaths)
			if t.NotAgentPaths > 0 {
				// Paths others changed during the turn: not its own.
				paths += fmt.Sprintf(" (+%d)", t.NotAgentPaths)
				others = true
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Num, dash(label(t.ID)), dash(label(t.Anchor)), t.State, when(t.BeganAt), paths, human.Bytes(t.JournalBytes))
		}
		w.Flush()
		if others {
			fmt.Println("(+N): paths processes not the turn's agent changed during it; not the turn's")
		}
	}
	if l.PrunedEarly != nil {
		fmt.Println(prunedEarly(l.PrunedEarly))
	}
	if l.OutsideTurns > 0 {
		fmt.Printf("%s changed outside turns (cowfs show --outside lists them)\n", human.Count(l.OutsideTurns, "path", "paths"))
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
