package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/hook"
)

type integrateOptions struct {
	remove     bool
	rewind     string
	transcript string
	agentScope string
	rollback   rollbackOptions
}

func newIntegrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "integrate",
		Short: "Put cowfs under an agent CLI: its hooks begin and end turns",
		Args:  exactArgs(0),
	}
	cmd.AddCommand(newIntegrateAgentCommand(claudeCode), newIntegrateAgentCommand(geminiCLI))
	return cmd
}

// integration is what 'cowfs integrate AGENT' knows of one agent CLI.
type integration struct {
	settings hook.Settings
	name     string // the CLI, for people: "Claude Code"
	long     string // the command's help
	hooked   string // what the hooks do, after they are written
	rewindTo string // --rewind's help: what happens to the conversation
	// transcript is where the CLI keeps its sessions, for --transcript.
	transcript string
	rewind     func(integrateOptions) error
}

// newIntegrateAgentCommand is 'cowfs integrate AGENT'.
func newIntegrateAgentCommand(in integration) *cobra.Command {
	var opts integrateOptions
	cmd := &cobra.Command{
		Use:   in.settings.Agent,
		Short: "Write cowfs's hooks into the workspace's " + in.settings.Dir + "/settings.json",
		Long:  in.long,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.remove && opts.rewind != "":
				return usageError{errors.New("--remove and --rewind do not go together")}
			case opts.rewind == "" && (opts.rollback.dryRun || opts.rollback.force || opts.rollback.verbose || opts.transcript != ""):
				return usageError{errors.New("--dry-run, --force, --verbose and --transcript go with --rewind")}
			case opts.agentScope != scopeAgentCLI && opts.agentScope != scopeMount:
				return usageError{fmt.Errorf("--agent-scope is %q; it is %s or %s", opts.agentScope, scopeAgentCLI, scopeMount)}
			case opts.rewind != "":
				if err := checkTurnRefs(opts.rewind); err != nil {
					return err
				}
				return in.rewind(opts)
			}
			return runIntegrate(in, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.remove, "remove", false, "take cowfs's hooks out")
	f.StringVar(&opts.rewind, "rewind", "", "roll back to before `TURN` and "+in.rewindTo)
	f.StringVar(&opts.transcript, "transcript", "", "the session's transcript `FILE` (default: found under "+in.transcript+")")
	f.StringVar(&opts.agentScope, "agent-scope", scopeAgentCLI, "the turns' agent: `agent` ("+in.name+" and its descendants) or mount (the mount's default)")
	f.BoolVar(&opts.rollback.json, "json", false, "print JSON")
	f.BoolVarP(&opts.rollback.dryRun, "dry-run", "n", false, "with --rewind: print the plan and change nothing")
	f.BoolVar(&opts.rollback.force, "force", false, "with --rewind: also restore paths changed outside turns")
	f.BoolVarP(&opts.rollback.verbose, "verbose", "v", false, "with --rewind: list every path, not only those skipped")
	return cmd
}

// integrated is the JSON of 'cowfs integrate AGENT'.
type integrated struct {
	Settings string   `json:"settings"`
	Events   []string `json:"events"`  // events whose hooks are cowfs's now
	Changed  bool     `json:"changed"` // the file was written (or removed)
	Removed  int      `json:"removed,omitempty"`
	// Daemon: a daemon serves the workspace (without one the hooks
	// block prompts).
	Daemon bool `json:"daemon"`
}

func runIntegrate(in integration, opts integrateOptions) error {
	loc, err := located()
	if err != nil {
		return err
	}
	c := ctl.NewClient(loc.Socket())
	ctx, cancel := requestContext()
	defer cancel()
	view, serving, err := outsideTurns(ctx, c, loc)
	if err != nil {
		return err
	}
	path := in.settings.Path(view)
	old, err := in.settings.Read(view)
	if err != nil {
		return err
	}
	res := integrated{Settings: path, Daemon: serving}
	var next []byte
	if opts.remove {
		next, res.Removed, err = in.settings.Remove(old)
	} else {
		self := executable()
		var extra []string
		if opts.agentScope != scopeAgentCLI {
			extra = []string{"--agent-scope", opts.agentScope}
		}
		cmds := map[string]string{}
		for _, ev := range in.settings.Events {
			cmds[ev] = in.settings.Command(self, loc.Workspace, ev, extra...)
		}
		next, err = in.settings.Add(old, cmds)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.Equal(old, next) && !(old == nil && opts.remove) {
		if err := in.settings.Write(view, next); err != nil {
			return err
		}
		res.Changed = true
	}
	if res.Events, err = in.settings.In(next); err != nil {
		return err
	}
	if res.Events == nil {
		res.Events = []string{}
	}
	if serving && !opts.remove {
		// Markers standing now are from before the hooks: no prompt
		// should hear of them.
		t := hook.Turns{Daemon: c, Delivered: filepath.Join(loc.Dir, deliveredFile(in.settings.Agent))}
		if err := t.Seen(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "cowfs integrate %s: %v\n", in.settings.Agent, err)
		}
	}
	if opts.rollback.json {
		return printJSON(res)
	}
	switch {
	case opts.remove && res.Removed == 0:
		fmt.Printf("no cowfs hooks in %s\n", path)
	case opts.remove:
		fmt.Printf("cowfs's hooks taken out of %s\n", path)
	case !res.Changed:
		fmt.Printf("cowfs's hooks are in %s already\n", path)
	default:
		fmt.Printf("cowfs's hooks written to %s: %s\n", path, in.hooked)
	}
	if !serving && !opts.remove {
		fmt.Fprintf(os.Stderr, "cowfs integrate %s: no daemon serves %s: the hooks refuse every prompt until it is mounted: cowfs mount -d %s\n", in.settings.Agent, loc.Workspace, loc.Workspace)
	}
	return nil
}

// outsideTurns checks that no turn is open, so that the settings file
// is not written inside one (it would be the turn's change, and a
// rollback would take the hooks out). It returns where the workspace is
// seen (the mountpoint if a daemon serves it) and whether one does.
func outsideTurns(ctx context.Context, c *ctl.Client, loc daemon.Location) (string, bool, error) {
	st, err := c.Status(ctx)
	if errors.Is(err, ctl.ErrNotRunning) {
		return loc.Workspace, false, nil
	}
	if err != nil {
		return "", false, err
	}
	if t := st.OpenTurn; t != nil {
		return "", true, codedError{fmt.Errorf("turn %d%s is open: the settings would be written inside it; end it first with 'cowfs -w %s turn end'", t.Num, idAnchor(t.ID, t.Anchor), loc.Workspace), exitBusy}
	}
	view := st.Mountpoint
	if view == "" {
		view = loc.Workspace
	}
	return view, true, nil
}

// printRewound prints a rewind: all of it (whole) as JSON, or its
// rollback rb as 'cowfs rollback' prints it, for the caller to say next
// how to resume the conversation. done: nothing more is to be printed.
func printRewound(opts rollbackOptions, whole any, rb ctl.RollbackResult) (done bool, err error) {
	if opts.json {
		if err := printJSON(whole); err != nil {
			return true, err
		}
		if !rb.Complete {
			return true, errPartial
		}
		return true, nil
	}
	opts.json = false
	return false, printRollback(opts, rb)
}
