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
	var opts integrateOptions
	claude := &cobra.Command{
		Use:   "claude-code",
		Short: "Write cowfs's hooks into the workspace's .claude/settings.json",
		Long: `Write the hooks that put Claude Code's prompts under cowfs into the workspace's
.claude/settings.json: UserPromptSubmit begins a turn, PreToolUse a step (the
tool call), Stop and SessionEnd end the turn; each runs 'cowfs hook
claude-code EVENT' by this binary's absolute path, with -w naming the
workspace. What else the file holds is kept; cowfs's own hooks are replaced,
never doubled. Done outside any turn: refused while one is open (end it with
'cowfs turn end'). With no daemon serving the workspace, the hooks are written
and block every prompt until it is mounted ('cowfs mount -d WORKSPACE').

Each turn's agent is the Claude Code process and its descendants, so what a
person changes in the workspace meanwhile is not the agent's (a rollback
leaves it, and reports the agent's changes to the same paths);
--agent-scope mount leaves the agent to the mount's default instead.

--remove takes cowfs's hooks out again (and the keys, or the file, they alone
filled).

--rewind TURN rolls the workspace back to before TURN, as 'cowfs rollback
TURN' does (--dry-run, --force, --verbose as there), and prints the command
that truncates Claude Code's conversation to match:

  claude --resume SESSION --resume-session-at MESSAGE

which resumes the session with the messages before TURN's prompt only. It
reads the session's transcript under $CLAUDE_CONFIG_DIR or ~/.claude
(--transcript names it). Run it in the workspace. The next prompt tells the
model, once, that the files went back.`,
		Args: exactArgs(0),
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
				return runRewindClaude(opts)
			}
			return runIntegrateClaude(opts)
		},
	}
	f := claude.Flags()
	f.BoolVar(&opts.remove, "remove", false, "take cowfs's hooks out")
	f.StringVar(&opts.rewind, "rewind", "", "roll back to before `TURN` and print the claude command that truncates the conversation to match")
	f.StringVar(&opts.transcript, "transcript", "", "the session's transcript `FILE` (default: found under ~/.claude/projects)")
	f.StringVar(&opts.agentScope, "agent-scope", scopeAgentCLI, "the turns' agent: `agent` (Claude Code and its descendants) or mount (the mount's default)")
	f.BoolVar(&opts.rollback.json, "json", false, "print JSON")
	f.BoolVarP(&opts.rollback.dryRun, "dry-run", "n", false, "with --rewind: print the plan and change nothing")
	f.BoolVar(&opts.rollback.force, "force", false, "with --rewind: also restore paths changed outside turns")
	f.BoolVarP(&opts.rollback.verbose, "verbose", "v", false, "with --rewind: list every path, not only those skipped")
	cmd.AddCommand(claude, integrateGeminiCmd())
	return cmd
}

// integrated is the JSON of 'cowfs integrate claude-code'.
type integrated struct {
	Settings string   `json:"settings"`
	Events   []string `json:"events"`  // events whose hooks are cowfs's now
	Changed  bool     `json:"changed"` // the file was written (or removed)
	Removed  int      `json:"removed,omitempty"`
	// Daemon: a daemon serves the workspace (without one the hooks
	// block prompts).
	Daemon bool `json:"daemon"`
}

func runIntegrateClaude(opts integrateOptions) error {
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
	path := hook.ClaudeSettingsPath(view)
	old, err := hook.ReadClaudeSettings(path)
	if err != nil {
		return err
	}
	res := integrated{Settings: path, Daemon: serving}
	var next []byte
	if opts.remove {
		next, res.Removed, err = hook.RemoveClaudeHooks(old)
	} else {
		self := executable()
		var extra []string
		if opts.agentScope != scopeAgentCLI {
			extra = []string{"--agent-scope", opts.agentScope}
		}
		cmds := map[string]string{}
		for _, ev := range hook.ClaudeEvents {
			cmds[ev] = hook.ClaudeHookCommand(self, loc.Workspace, ev, extra...)
		}
		next, err = hook.AddClaudeHooks(old, cmds)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.Equal(old, next) && !(old == nil && opts.remove) {
		if err := hook.WriteClaudeSettings(path, next); err != nil {
			return err
		}
		res.Changed = true
	}
	if res.Events, err = hook.ClaudeHooksIn(next); err != nil {
		return err
	}
	if res.Events == nil {
		res.Events = []string{}
	}
	if serving && !opts.remove {
		// Markers standing now are from before the hooks: no prompt
		// should hear of them.
		t := hook.Turns{Daemon: c, Delivered: filepath.Join(loc.Dir, deliveredFile("claude-code"))}
		if err := t.Seen(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "cowfs integrate claude-code: %v\n", err)
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
		fmt.Printf("cowfs's hooks written to %s: UserPromptSubmit begins a turn, PreToolUse a step, Stop and SessionEnd end it\n", path)
	}
	if !serving && !opts.remove {
		fmt.Fprintf(os.Stderr, "cowfs integrate claude-code: no daemon serves %s: the hooks block every prompt until it is mounted: cowfs mount -d %s\n", loc.Workspace, loc.Workspace)
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
