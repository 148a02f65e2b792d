package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/hook"
)

// integrateGeminiCmd is cowfs integrate gemini.
func integrateGeminiCmd() *cobra.Command {
	var opts integrateOptions
	cmd := &cobra.Command{
		Use:   "gemini",
		Short: "Write cowfs's hooks into the workspace's .gemini/settings.json",
		Long: `Write the hooks that put Gemini CLI's prompts under cowfs into the workspace's
.gemini/settings.json: BeforeAgent begins a turn, BeforeTool a step (the tool
call), AfterAgent and SessionEnd end the turn; each runs 'cowfs hook gemini
EVENT' by this binary's absolute path, with -w naming the workspace (see
'cowfs hook gemini --help'). What else the file holds is kept; cowfs's own
hooks are replaced, never doubled. Done outside any turn: refused while one is
open (end it with 'cowfs turn end'). With no daemon serving the workspace,
the hooks are written and deny every prompt until it is mounted
('cowfs mount -d -w WORKSPACE'). Gemini CLI warns at start that the project
has hooks, and runs them.

Each turn's agent is the Gemini CLI process and its descendants, so what a
person changes in the workspace meanwhile is not the agent's (a rollback
leaves it, and reports the agent's changes to the same paths);
--agent-scope mount leaves the agent to the mount's default instead.

--remove takes cowfs's hooks out again (and the keys, or the file, they alone
filled).

--rewind TURN rolls the workspace back to before TURN, as 'cowfs rollback
TURN' does (--dry-run, --force, --verbose as there), and truncates the Gemini
CLI conversation to match, as its /rewind does: TURN's prompt and all after it
leave the session's file (found under $GEMINI_CLI_HOME or ~/.gemini;
--transcript names it). It then prints the command that goes on from there:

  gemini --resume SESSION

Quit Gemini CLI first: a running CLI keeps the conversation it holds. The
next prompt tells the model, once, that the files went back.`,
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
				return runRewindGemini(opts)
			}
			return runIntegrateGemini(opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.remove, "remove", false, "take cowfs's hooks out")
	f.StringVar(&opts.rewind, "rewind", "", "roll back to before `TURN` and truncate the Gemini CLI conversation to match")
	f.StringVar(&opts.transcript, "transcript", "", "the session's `FILE` (default: found under ~/.gemini/tmp)")
	f.StringVar(&opts.agentScope, "agent-scope", scopeAgentCLI, "the turns' agent: `agent` (Gemini CLI and its descendants) or mount (the mount's default)")
	f.BoolVar(&opts.rollback.json, "json", false, "print JSON")
	f.BoolVarP(&opts.rollback.dryRun, "dry-run", "n", false, "with --rewind: print the plan and change nothing")
	f.BoolVar(&opts.rollback.force, "force", false, "with --rewind: also restore paths changed outside turns")
	f.BoolVarP(&opts.rollback.verbose, "verbose", "v", false, "with --rewind: list every path, not only those skipped")
	return cmd
}

func runIntegrateGemini(opts integrateOptions) error {
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
	path := hook.GeminiSettingsPath(view)
	old, err := hook.ReadClaudeSettings(path) // any settings file: nil if there is none
	if err != nil {
		return err
	}
	res := integrated{Settings: path, Daemon: serving}
	var next []byte
	if opts.remove {
		next, res.Removed, err = hook.RemoveGeminiHooks(old)
	} else {
		self := executable()
		var extra []string
		if opts.agentScope != scopeAgentCLI {
			extra = []string{"--agent-scope", opts.agentScope}
		}
		cmds := map[string]string{}
		for _, ev := range hook.GeminiEvents {
			cmds[ev] = hook.GeminiHookCommand(self, loc.Workspace, ev, extra...)
		}
		next, err = hook.AddGeminiHooks(old, cmds)
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
	if res.Events, err = hook.GeminiHooksIn(next); err != nil {
		return err
	}
	if res.Events == nil {
		res.Events = []string{}
	}
	if serving && !opts.remove {
		// Markers standing now are from before the hooks: no prompt
		// should hear of them.
		t := hook.Turns{Daemon: c, Delivered: filepath.Join(loc.Dir, deliveredFile("gemini"))}
		if err := t.Seen(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "cowfs integrate gemini: %v\n", err)
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
		fmt.Printf("cowfs's hooks written to %s: BeforeAgent begins a turn, BeforeTool a step, AfterAgent and SessionEnd end it\n", path)
	}
	if !serving && !opts.remove {
		fmt.Fprintf(os.Stderr, "cowfs integrate gemini: no daemon serves %s: the hooks deny every prompt until it is mounted: cowfs mount -d -w %s\n", loc.Workspace, loc.Workspace)
	}
	return nil
}

// rewoundGemini is the JSON of 'cowfs integrate gemini --rewind'.
type rewoundGemini struct {
	Rollback ctl.RollbackResult `json:"rollback"`
	Resume   rewoundGeminiAt    `json:"resume"`
}

type rewoundGeminiAt struct {
	hook.GeminiResume
	// Truncated: the session file was truncated (false in a dry run,
	// or if the conversation ended before the turn already).
	Truncated bool   `json:"truncated"`
	Command   string `json:"command"`
	Dir       string `json:"dir"` // where to run it: the workspace
}

// runRewindGemini rolls back to before a turn the Gemini CLI hooks
// began and truncates the session to match. The resume point is found
// first: a turn whose conversation point cannot be found is not rolled
// back, so files and conversation never part.
func runRewindGemini(opts integrateOptions) error {
	// Like rollback, it works with no daemon, on the journal itself.
	global.command = "rollback"
	var res rewoundGemini
	err := call(func(ctx context.Context, c *ctl.Client) error {
		t, err := c.Turn(ctx, opts.rewind, "")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(t.ID, hook.GeminiTurnPrefix) {
			return usageError{fmt.Errorf("turn %d%s was not begun by the Gemini CLI hooks: roll it back with 'cowfs rollback %d'", t.Num, idAnchor(t.ID, t.Anchor), t.Num)}
		}
		home, _ := os.UserHomeDir()
		if res.Resume.GeminiResume, err = hook.GeminiResumePoint(t.Anchor, home, opts.transcript); err != nil {
			return fmt.Errorf("%w; roll back the files alone with 'cowfs rollback %d'", err, t.Num)
		}
		res.Rollback, err = c.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(opts.rewind), DryRun: opts.rollback.dryRun, Force: opts.rollback.force})
		return err
	})
	if err != nil {
		return err
	}
	if !res.Rollback.DryRun && res.Rollback.Complete {
		if err := res.Resume.Truncate(); err != nil {
			return fmt.Errorf("the files went back to before turn %d, but the conversation was not truncated: %w; in Gemini CLI, /rewind to that turn's prompt", res.Rollback.Target, err)
		}
		res.Resume.Truncated = res.Resume.RewindTo != ""
	}
	loc, _ := located()
	res.Resume.Command = res.Resume.GeminiResume.Command()
	res.Resume.Dir = loc.Workspace
	if opts.rollback.json {
		if err := printJSON(res); err != nil {
			return err
		}
		if !res.Rollback.Complete {
			return errPartial
		}
		return nil
	}
	quiet := opts.rollback
	quiet.json = false
	if err := printRollback(quiet, res.Rollback); err != nil {
		return err
	}
	switch {
	case res.Rollback.DryRun:
		fmt.Printf("The conversation would then be truncated before turn %d's prompt in %s; resume it, in %s, with:\n  %s\n", res.Rollback.Target, res.Resume.Transcript, shownPath(ctl.Path(loc.Workspace)), res.Resume.Command)
	case res.Resume.Truncated:
		fmt.Printf("The conversation was truncated before turn %d's prompt (%s). Resume it, in %s, with:\n  %s\n", res.Rollback.Target, res.Resume.Transcript, shownPath(ctl.Path(loc.Workspace)), res.Resume.Command)
	default:
		fmt.Printf("The conversation ends before turn %d's prompt already. Resume it, in %s, with:\n  %s\n", res.Rollback.Target, shownPath(ctl.Path(loc.Workspace)), res.Resume.Command)
	}
	return nil
}
