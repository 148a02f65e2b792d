package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/hook"
)

// geminiCLI is Gemini CLI's integration.
var geminiCLI = integration{
	settings:   hook.Gemini,
	name:       "Gemini CLI",
	hooked:     "BeforeAgent begins a turn, BeforeTool a step, AfterAgent and SessionEnd end it",
	rewindTo:   "truncate the Gemini CLI conversation to match",
	transcript: "~/.gemini/tmp",
	rewind:     runRewindGemini,
	long: `Write the hooks that put Gemini CLI's prompts under cowfs into the workspace's
.gemini/settings.json: BeforeAgent begins a turn, BeforeTool a step (the tool
call), AfterAgent and SessionEnd end the turn; each runs 'cowfs hook gemini
EVENT' by this binary's absolute path, with -w naming the workspace (see
'cowfs hook gemini --help'). What else the file holds is kept; cowfs's own
hooks are replaced, never doubled. Done outside any turn: refused while one is
open (end it with 'cowfs turn end'). With no daemon serving the workspace,
the hooks are written and deny every prompt until it is mounted
('cowfs mount -d WORKSPACE'). Gemini CLI warns at start that the project
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
	if done, err := printRewound(opts.rollback, res, res.Rollback); done || err != nil {
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
