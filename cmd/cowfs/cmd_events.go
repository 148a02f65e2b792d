package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

type eventsOptions struct {
	follow bool
	json   bool
	since  uint64
}

func newEventsCommand() *cobra.Command {
	var opts eventsOptions
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print what happened: every change, turn, step, rollback and unrevert",
		Long: `Print the events in the window, oldest first: every change made through the
mount (with the process that made it), every turn begun and ended, every step,
rollback and unrevert. With --follow, keep printing them as they happen.
--since SEQ starts after the event numbered SEQ.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error { return runEvents(opts) },
	}
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing events as they happen")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one compact JSON object per line (NDJSON)")
	cmd.Flags().Uint64Var(&opts.since, "since", 0, "start after event `SEQ`")
	return cmd
}

func runEvents(opts eventsOptions) error {
	c, _, err := client()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// One compact object per line (NDJSON), as the socket sends them.
	enc := json.NewEncoder(os.Stdout)
	return c.Events(ctx, opts.since, opts.follow, func(e ctl.Event) error {
		if opts.json {
			return enc.Encode(e)
		}
		fmt.Println(eventLine(e))
		return nil
	})
}

// eventLine is an event for a human.
func eventLine(e ctl.Event) string {
	at := e.Time.Local().Format("15:04:05.000")
	where := ""
	if e.Turn != 0 {
		where = fmt.Sprintf(" [turn %d", e.Turn)
		if e.Step != "" {
			where += " step " + e.Step
		}
		where += "]"
	}
	switch e.Type {
	case ctl.EventChange:
		what := shownPath(e.Path)
		if e.From != "" {
			what = shownPath(e.From) + " -> " + what
		}
		if e.Outside {
			return fmt.Sprintf("%d %s %-8s %s outside the mount%s", e.Seq, at, e.Kind, what, where)
		}
		if e.Rollback != 0 {
			return fmt.Sprintf("%d %s %-8s %s by rollback %d", e.Seq, at, e.Kind, what, e.Rollback)
		}
		whose := ""
		if e.Agent != nil && !*e.Agent {
			whose = ", not the agent's"
		}
		return fmt.Sprintf("%d %s %-8s %s by %s (pid %d, uid %d%s)%s", e.Seq, at, e.Kind, what, commandOf(e.Command, e.CommandLine), e.Pid, e.Uid, whose, where)
	case ctl.EventTurnBegin:
		return fmt.Sprintf("%d %s turn %d began%s", e.Seq, at, e.Turn, idAnchor(e.ID, e.Anchor))
	case ctl.EventTurnEnd:
		return fmt.Sprintf("%d %s turn %d ended", e.Seq, at, e.Turn)
	case ctl.EventStep:
		return fmt.Sprintf("%d %s step %s%s began%s", e.Seq, at, human.Shown(e.Step), stepName(e.Name), where)
	case ctl.EventRollback, ctl.EventUnrevert:
		res := ctl.RollbackResult{Target: e.Target, Unrevert: e.Type == ctl.EventUnrevert,
			Complete: e.Failure == "", Failure: e.Failure}
		if e.Counts != nil {
			res.Counts = *e.Counts
		}
		return fmt.Sprintf("%d %s %s", e.Seq, at, rollbackSummary(res))
	case ctl.EventGap:
		return fmt.Sprintf("events up to %d have left the window", e.Seq)
	}
	return fmt.Sprintf("%d %s %s", e.Seq, at, e.Type)
}
