package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

type showOptions struct {
	json    bool
	step    string
	steps   bool
	outside bool
}

func newShowCommand() *cobra.Command {
	var opts showOptions
	cmd := &cobra.Command{
		Use:   "show TURN | --outside",
		Short: "Show what a turn changed, and which process changed it",
		Long: `Show the paths TURN (a number, or the harness's id) changed, with the net kind
of each change, the pre-image bytes journaled for it, the step (tool call) it
was made in, and the pid, uid and command line that made it. In a turn whose
agent was named (--agent-*), changes other processes made during it are listed
apart, marked "not the agent's": they are not the turn's, and rollbacks leave
them alone unless forced.

--step ID shows only what step ID changed; --steps lists the turn's steps in
the order they began, each with the paths it changed (a path two steps
changed is under each).

--outside (or TURN 0) lists the paths changed while no turn was open, through
the mount or outside it: rollbacks leave them alone unless forced.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.outside {
				return exactArgs(0)(cmd, args)
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.outside || isTurnZero(args[0]) {
				if opts.step != "" || opts.steps {
					return usageError{errors.New("changes outside turns have no steps")}
				}
				return runShowOutside(opts)
			}
			if err := checkTurnRefs(args[0]); err != nil {
				return err
			}
			if opts.steps && opts.step != "" {
				return usageError{errors.New("--steps lists every step; --step shows one")}
			}
			if opts.steps {
				return runShowSteps(opts, args[0])
			}
			return runShow(opts, args[0])
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().StringVar(&opts.step, "step", "", "only the changes made in step `ID`")
	cmd.Flags().BoolVar(&opts.steps, "steps", false, "list the turn's steps, each with the paths it changed")
	cmd.Flags().BoolVar(&opts.outside, "outside", false, "list the changes made outside turns")
	return cmd
}

// isTurnZero reports whether ref is turn 0 (0, 00 …): no turn, the
// changes outside turns, as events number them.
func isTurnZero(ref string) bool {
	return ref != "" && strings.Trim(ref, "0") == ""
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
		d.Num, idAnchor(d.ID, d.Anchor), when(d.BeganAt), ended, human.Count(d.ChangedPaths, "path", "paths"), notAgentPaths(d.NotAgentPaths), human.Bytes(d.JournalBytes), agentNote(d.Agent))
	return changeTable(os.Stdout, d.Changes, true)
}

func runShowSteps(opts showOptions, ref string) error {
	var l ctl.StepList
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		l, err = c.Steps(ctx, ref)
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(l)
	}
	if len(l.Steps) == 0 {
		fmt.Printf("turn %d changed nothing and had no steps\n", l.Turn)
		return nil
	}
	fmt.Printf("turn %d: %s\n", l.Turn, human.Count(len(l.Steps), "step", "steps"))
	for _, st := range l.Steps {
		if st.ID == "" {
			fmt.Printf("before the first step: %s changed%s\n", human.Count(st.ChangedPaths, "path", "paths"), notAgentPaths(st.NotAgentPaths))
		} else {
			fmt.Printf("step %s%s, began %s: %s changed%s\n", human.Shown(st.ID), stepName(st.Name), when(*st.BeganAt), human.Count(st.ChangedPaths, "path", "paths"), notAgentPaths(st.NotAgentPaths))
		}
		if err := changeTable(os.Stdout, st.Changes, false); err != nil {
			return err
		}
	}
	return nil
}

func runShowOutside(opts showOptions) error {
	var o ctl.OutsideChanges
	err := call(func(ctx context.Context, c *ctl.Client) (err error) {
		o, err = c.Outside(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(o)
	}
	fmt.Printf("outside turns: %s changed (rollbacks leave them alone unless forced)\n", human.Count(len(o.Changes), "path", "paths"))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, ch := range o.Changes {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", ch.Kind, changedPath(ch), human.Bytes(ch.Bytes), when(ch.Time), who(ch))
	}
	return w.Flush()
}

// changeTable lists changes, one a line: kind, path, bytes, the step
// (if withStep) and who made it.
func changeTable(out io.Writer, changes []ctl.Change, withStep bool) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, ch := range changes {
		step := ""
		if withStep {
			step = "\t" + dash(shortLabel(ch.Step))
		}
		whose := ""
		if !ch.ByAgent() {
			whose = "\tnot the agent's"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s%s\t%s%s\n", ch.Kind, changedPath(ch), human.Bytes(ch.Bytes), step, who(ch), whose)
	}
	return w.Flush()
}

// changedPath is a change's path, with where it came from if renamed.
func changedPath(ch ctl.Change) string {
	if ch.From != "" {
		return shownPath(ch.From) + " -> " + shownPath(ch.Path)
	}
	return shownPath(ch.Path)
}

// who says which process made a change.
func who(ch ctl.Change) string {
	if ch.Outside && ch.Pid == 0 {
		return "outside the mount"
	}
	return fmt.Sprintf("%s pid %d uid %d", commandOf(ch.Command, ch.CommandLine), ch.Pid, ch.Uid)
}

// commandOf is a process as shown: its command line, or its command
// name where no command line was journaled.
func commandOf(comm, cmdline string) string {
	if cmdline != "" {
		return human.Shown(cmdline)
	}
	return dash(human.Shown(comm))
}

// stepName is a step's name, as " (NAME)", if it has one.
func stepName(name string) string {
	if name == "" {
		return ""
	}
	return " (" + human.Shown(name) + ")"
}
