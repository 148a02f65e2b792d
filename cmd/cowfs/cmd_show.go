package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
)

type showOptions struct {
	json bool
	step string
}

func newShowCommand() *cobra.Command {
	var opts showOptions
	cmd := &cobra.Command{
		Use:   "show TURN",
		Short: "Show what a turn changed, and which process changed it",
		Long:  "Show the paths TURN (a number, or the harness's id) changed, with the net kind of each change, the pre-image bytes journaled for it, and the pid, uid and command that made it. In a turn whose agent was named (--agent-*), changes other processes made during it are listed apart, marked \"not the agent's\": they are not the turn's, and rollbacks leave them alone unless forced.",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTurnRefs(args[0]); err != nil {
				return err
			}
			return runShow(opts, args[0])
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().StringVar(&opts.step, "step", "", "only the changes made in step `ID`")
	return cmd
}

func runShow(opts showOptions, ref string) error {
	var d ctl.TurnDetail
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		d, err = c.Turn(ctx, ref, opts.step)
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(d)
	}
	ended := "open"
	if d.EndedAt != nil {
		ended = "ended " + when(*d.EndedAt)
	}
	fmt.Printf("turn %d%s: began %s, %s; %s changed%s, %s journaled%s\n",
		d.Num, idAnchor(d.ID, d.Anchor), when(d.BeganAt), ended, count(d.ChangedPaths, "path", "paths"), notAgentPaths(d.NotAgentPaths), humanBytes(d.JournalBytes), agentNote(d.Agent))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, ch := range d.Changes {
		path := shownPath(ch.Path)
		if ch.From != "" {
			path = shownPath(ch.From) + " -> " + path
		}
		if ch.Outside && ch.Pid == 0 {
			fmt.Fprintf(w, "  %s\t%s\t%s\toutside the mount\n", ch.Kind, path, humanBytes(ch.Bytes))
			continue
		}
		whose := ""
		if !ch.ByAgent() {
			whose = "\tnot the agent's"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s pid %d uid %d%s\n", ch.Kind, path, humanBytes(ch.Bytes), dash(shown(ch.Command)), ch.Pid, ch.Uid, whose)
	}
	return w.Flush()
}
