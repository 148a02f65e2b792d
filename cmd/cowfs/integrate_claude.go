package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/hook"
)

// claudeCode is Claude Code's integration.
var claudeCode = integration{
	settings:   hook.Claude,
	name:       "Claude Code",
	hooked:     "UserPromptSubmit begins a turn, PreToolUse a step, Stop and SessionEnd end it",
	rewindTo:   "print the claude command that truncates the conversation to match",
	transcript: "~/.claude/projects",
	rewind:     runRewindClaude,
	long: `Write the hooks that put Claude Code's prompts under cowfs into the workspace's
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
}

// rewound is the JSON of 'cowfs integrate claude-code --rewind'.
type rewound struct {
	Rollback ctl.RollbackResult `json:"rollback"`
	Resume   rewoundResume      `json:"resume"`
}

type rewoundResume struct {
	hook.ClaudeResume
	// Command resumes the session truncated before the turn; empty if
	// the turn's prompt began the session (start a new one).
	Command string `json:"command"`
	Dir     string `json:"dir"` // where to run it: the workspace
}

// runRewindClaude rolls back to before a turn the Claude Code hooks
// began and prints how to truncate the conversation to match. The
// resume point is found first: a turn whose conversation point cannot be
// found is not rolled back, so files and conversation never part.
func runRewindClaude(opts integrateOptions) error {
	// Like rollback, it works with no daemon, on the journal itself.
	global.command = "rollback"
	var res rewound
	err := call(func(ctx context.Context, c *ctl.Client) error {
		t, err := c.Turn(ctx, opts.rewind, "")
		if err != nil {
			return err
		}
		if res.Resume.ClaudeResume, err = resumePoint(t.Turn, opts.transcript); err != nil {
			return err
		}
		res.Rollback, err = c.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(opts.rewind), DryRun: opts.rollback.dryRun, Force: opts.rollback.force})
		return err
	})
	if err != nil {
		return err
	}
	loc, _ := located()
	res.Resume.Command = res.Resume.ClaudeResume.Command()
	res.Resume.Dir = loc.Workspace
	if done, err := printRewound(opts.rollback, res, res.Rollback); done || err != nil {
		return err
	}
	then := "Now truncate the conversation to match, in " + shownPath(ctl.Path(loc.Workspace)) + ":"
	if res.Rollback.DryRun {
		then = "The conversation would then be truncated, in " + shownPath(ctl.Path(loc.Workspace)) + ", with:"
	}
	if res.Resume.Command == "" {
		fmt.Printf("Turn %d's prompt began Claude Code session %s: nothing of the session comes before it; start a new session (claude).\n", res.Rollback.Target, res.Resume.Session)
		return nil
	}
	fmt.Printf("%s\n  %s\n", then, res.Resume.Command)
	return nil
}

// resumePoint finds where the conversation stood when t's prompt came.
func resumePoint(t ctl.Turn, transcript string) (hook.ClaudeResume, error) {
	session, _, err := hook.ClaudeAnchorParts(t.Anchor)
	if err != nil || !strings.HasPrefix(t.ID, hook.ClaudeTurnPrefix) {
		return hook.ClaudeResume{}, usageError{fmt.Errorf("turn %d%s was not begun by the Claude Code hook: roll it back with 'cowfs rollback %d'", t.Num, idAnchor(t.ID, t.Anchor), t.Num)}
	}
	if transcript == "" {
		if transcript, err = hook.ClaudeTranscript(hook.ClaudeConfigDir(), session); err != nil {
			return hook.ClaudeResume{}, fmt.Errorf("%w; name it with --transcript, or roll back the files alone with 'cowfs rollback %d'", err, t.Num)
		}
	}
	r, err := hook.ClaudeResumePoint(t.Anchor, transcript)
	if errors.Is(err, hook.ErrPromptNotInTranscript) {
		err = fmt.Errorf("%w; roll back the files alone with 'cowfs rollback %d'", err, t.Num)
	}
	return r, err
}
