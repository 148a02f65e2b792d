package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
)

type logOptions struct {
	json bool
}

func newLogCommand() *cobra.Command {
	var opts logOptions
	cmd := &cobra.Command{
		Use:   "log",
		Short: "List the turns in the rollback window",
		Args:  exactArgs(0),
		RunE:  func(cmd *cobra.Command, args []string) error { return runLog(opts) },
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
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
	if len(l.Turns) == 0 {
		fmt.Println("no turns yet")
	} else {
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TURN\tID\tANCHOR\tSTATE\tBEGAN\tPATHS\tJOURNAL")
		for _, t := range l.Turns {
			paths := fmt.Sprint(t.ChangedPaths)
			if t.NotAgentPaths > 0 {
				// Paths others changed during the turn: not its own.
				paths += fmt.Sprintf(" (+%d not the agent's)", t.NotAgentPaths)
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Num, dash(shown(t.ID)), dash(shown(t.Anchor)), t.State, when(t.BeganAt), paths, humanBytes(t.JournalBytes))
		}
		w.Flush()
	}
	if l.PrunedEarly != nil {
		fmt.Println(prunedEarly(l.PrunedEarly))
	}
	if l.OutsideTurns > 0 {
		fmt.Printf("%s changed outside turns (cowfs show --outside lists them)\n", count(l.OutsideTurns, "path", "paths"))
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
