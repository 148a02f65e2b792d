package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

type turnBeginOptions struct {
	id, anchor string
	json       bool
	agent      agentFlags
}

type turnEndOptions struct {
	json bool
}

type turnStepOptions struct {
	name string
	json bool
}

func newTurnCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "turn",
		Short: "Begin or end a turn",
		Args:  exactArgs(0),
	}
	var bo turnBeginOptions
	begin := &cobra.Command{
		Use:   "begin",
		Short: "Begin a turn: changes from now on belong to it",
		Long: `Begin a turn. --id is the harness's own id for it: unique in the window, and
nothing that reads as a number, since numbers name turns by position (7, 07,
-1, +5, 0x10, 1e3 and 1.5 are refused, exit 2). --anchor ties it to the
conversation, e.g. the user message id, and is returned in the marker a
rollback to before this turn leaves.

` + agentHelp + ` Without them, the turn gets the
daemon's default (cowfs mount --agent-*; under cowfs run, its command).
Each --agent-pid must be running and each --agent-cgroup must exist (else
exit 2).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTurnID(bo.id); err != nil {
				return err
			}
			return runTurnBegin(bo)
		},
	}
	begin.Flags().StringVar(&bo.id, "id", "", "the harness's id for the turn")
	begin.Flags().StringVar(&bo.anchor, "anchor", "", "conversation anchor, e.g. the user message id")
	begin.Flags().BoolVar(&bo.json, "json", false, "print JSON")
	bo.agent.add(begin.Flags(), "the turn's")

	var eo turnEndOptions
	end := &cobra.Command{
		Use:   "end",
		Short: "End the open turn",
		Long: `End the open turn. With no daemon serving the workspace — the harness, the
container or the daemon that began the turn went away — the turn is ended in
the journal directly, as the daemon would have ended it; what changed while
no daemon ran is journaled outside any turn, as a daemon started again would
find it. A rollback is refused while a turn is open, with or without a daemon.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error { return runTurnEnd(eo) },
	}
	end.Flags().BoolVar(&eo.json, "json", false, "print JSON")

	var so turnStepOptions
	step := &cobra.Command{
		Use:   "step ID",
		Short: "Mark the start of a step (a tool call) in the open turn",
		Long:  "Mark the start of a step of the open turn: changes until the next step or the end of the turn carry ID (the tool call's id), and 'cowfs show --step' and 'cowfs diff --step' can be limited to it. --name says what the step is (the tool's name), for 'cowfs show --steps'.",
		Args:  exactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return runTurnStep(so, args[0]) },
	}
	step.Flags().StringVar(&so.name, "name", "", "what the step is, e.g. the tool's `NAME`")
	step.Flags().BoolVar(&so.json, "json", false, "print JSON")
	cmd.AddCommand(begin, end, step)
	return cmd
}

func runTurnBegin(opts turnBeginOptions) error {
	var t ctl.Turn
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		t, err = c.BeginTurn(ctx, ctl.BeginTurnRequest{ID: opts.id, Anchor: opts.anchor, Agent: opts.agent.scope()})
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(t)
	}
	fmt.Printf("turn %d began%s%s\n", t.Num, idAnchor(t.ID, t.Anchor), agentNote(t.Agent))
	return nil
}

func runTurnEnd(opts turnEndOptions) error {
	var t ctl.Turn
	// Without a daemon too: a turn left open by one that went away
	// would otherwise refuse every rollback.
	err := callFor(true, func(ctx context.Context, c *ctl.Client) (err error) {
		t, err = c.EndTurn(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(t)
	}
	fmt.Printf("turn %d ended: %s changed%s, %s journaled\n", t.Num, human.Count(t.ChangedPaths, "path", "paths"), notAgentPaths(t.NotAgentPaths), human.Bytes(t.JournalBytes))
	return nil
}

func runTurnStep(opts turnStepOptions, id string) error {
	var st ctl.StepStarted
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		st, err = c.BeginStep(ctx, ctl.StepRequest{ID: id, Name: opts.name})
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(st)
	}
	fmt.Printf("turn %d: step %s%s began\n", st.Turn, human.Shown(st.ID), stepName(st.Name))
	return nil
}

// agentNote says who a turn's agent is, if it is not everyone.
func agentNote(s *ctl.AgentScope) string {
	if s == nil {
		return ""
	}
	var who []string
	for _, u := range s.Uids {
		who = append(who, fmt.Sprintf("uid %d", u))
	}
	for _, p := range s.Pids {
		who = append(who, fmt.Sprintf("pid %d and its descendants", p))
	}
	for _, c := range s.Cgroups {
		who = append(who, "cgroup "+human.Shown(c))
	}
	return "; agent: " + strings.Join(who, ", ")
}

// notAgentPaths says how many paths others changed during a turn.
func notAgentPaths(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d by processes not the agent's)", n)
}
