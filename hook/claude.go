package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cowfs/cowfs/ctl"
)

// ClaudeInput is what cowfs reads of the JSON Claude Code writes to a
// hook's standard input; other fields are ignored.
// The event is the hook's argument, not hook_event_name: the settings
// name it, and a hook run by hand need not.
type ClaudeInput struct {
	SessionID string `json:"session_id"`  // every event
	PromptID  string `json:"prompt_id"`   // UserPromptSubmit and the events of its answer
	ToolUseID string `json:"tool_use_id"` // PreToolUse
	ToolName  string `json:"tool_name"`   // PreToolUse: names a step that has no tool_use_id
}

// The Claude Code hook events cowfs uses.
const (
	ClaudePrompt     = "UserPromptSubmit" // begins a turn
	ClaudePreTool    = "PreToolUse"       // begins a step
	ClaudeStop       = "Stop"             // ends the turn: the answer is complete
	ClaudeSessionEnd = "SessionEnd"       // ends the turn: on SIGINT, Stop never comes
)

// ClaudeEvents are the events `cowfs integrate claude-code` hooks.
var ClaudeEvents = []string{ClaudePrompt, ClaudePreTool, ClaudeStop, ClaudeSessionEnd}

// ClaudeTurnPrefix starts the id of every turn the Claude Code hooks
// begin.
const ClaudeTurnPrefix = "cc-"

// maxHookInput bounds what a hook reads: PreToolUse carries the tool's
// input, a whole file for Write.
const maxHookInput = 64 << 20

// ReadClaudeInput reads the hook JSON from r. Input that is not JSON
// gives the zero ClaudeInput and an error; the hook still does what it
// can with it.
func ReadClaudeInput(r io.Reader) (ClaudeInput, error) {
	var in ClaudeInput
	b, err := io.ReadAll(io.LimitReader(r, maxHookInput))
	if err != nil {
		return in, fmt.Errorf("reading the hook input: %w", err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return ClaudeInput{}, fmt.Errorf("the hook input is not Claude Code's JSON: %w", err)
	}
	return in, nil
}

// ClaudeHook is one run of `cowfs hook claude-code EVENT`.
type ClaudeHook struct {
	Turns Turns
	// Workspace and Cowfs (the binary's path) go into messages.
	Workspace, Cowfs string
	// Agent is the scope of the turns it begins; nil: the mount's
	// default.
	Agent *ctl.AgentScope
	// NewID makes an id when the input lacks one (tests fix it).
	NewID func() string
}

// Result is what a hook run answers Claude Code. Code is always 0: a
// prompt is blocked with JSON on Stdout, and any other failure must not
// stop the agent.
type Result struct {
	Stdout []byte // JSON for Claude Code, or nothing
	Stderr string // for the person: Claude Code shows it in its debug and verbose views
	Code   int
}

// Run handles event with the hook input in.
func (h ClaudeHook) Run(ctx context.Context, event string, in ClaudeInput) Result {
	switch event {
	case ClaudePrompt:
		return h.prompt(ctx, in)
	case ClaudePreTool:
		return h.step(ctx, in)
	case ClaudeStop, ClaudeSessionEnd:
		return h.end(ctx, event)
	}
	return Result{Stderr: fmt.Sprintf("cowfs hook claude-code: %s is not an event cowfs uses (it uses %s); nothing done\n", event, strings.Join(ClaudeEvents, ", "))}
}

func (h ClaudeHook) prompt(ctx context.Context, in ClaudeInput) Result {
	req := ctl.BeginTurnRequest{ID: h.turnID(in), Anchor: ClaudeAnchor(in), Agent: h.Agent}
	b, err := h.Turns.Begin(ctx, req)
	if err != nil {
		return h.block(err)
	}
	var r Result
	if b.Ended != nil {
		r.Stderr += fmt.Sprintf("cowfs: ended turn %d, left open by an earlier prompt\n", b.Ended.Num)
	}
	r.Stderr += fmt.Sprintf("cowfs: turn %d began (id %s)\n", b.Turn.Num, b.Turn.ID)
	if b.Warning != "" {
		r.Stderr += "cowfs: " + b.Warning + "\n"
	}
	if len(b.Notes) > 0 {
		out := map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName":     ClaudePrompt,
			"additionalContext": strings.Join(b.Notes, "\n"),
		}}
		r.Stdout, _ = json.Marshal(out)
	}
	return r
}

// block refuses the prompt: a turn could not begin, and changes the
// agent made would belong to no turn.
func (h ClaudeHook) block(err error) Result {
	why := refusal(err, h.Cowfs, h.Workspace, "claude-code")
	out, _ := json.Marshal(map[string]any{"decision": "block", "reason": "cowfs: " + why})
	return Result{Stdout: out, Stderr: "cowfs: " + why + "\n"}
}

func (h ClaudeHook) step(ctx context.Context, in ClaudeInput) Result {
	id := in.ToolUseID
	if id == "" {
		id = "tool-" + h.newID()
		if in.ToolName != "" && printableLabel(in.ToolName) {
			id = in.ToolName + "-" + h.newID()
		}
	}
	if _, err := h.Turns.Step(ctx, id, in.ToolName); err != nil {
		return Result{Stderr: h.noted("step "+id+" not marked", err)}
	}
	return Result{}
}

func (h ClaudeHook) end(ctx context.Context, event string) Result {
	t, err := h.Turns.End(ctx)
	switch {
	case errors.Is(err, ErrNoTurn):
		return Result{}
	case errors.Is(err, ErrForeignTurn):
		var f *ForeignTurnError
		errors.As(err, &f)
		return Result{Stderr: fmt.Sprintf("cowfs: %s: turn %d was not begun by these hooks; left open\n", event, f.Turn.Num)}
	case err != nil:
		return Result{Stderr: h.noted(event+": the turn was not ended", err)}
	}
	return Result{Stderr: fmt.Sprintf("cowfs: turn %d ended: %d paths changed\n", t.Num, t.ChangedPaths)}
}

// noted says on stderr what a hook other than the prompt's could not do.
func (h ClaudeHook) noted(what string, err error) string {
	if errors.Is(err, ctl.ErrNotRunning) {
		return fmt.Sprintf("cowfs: %s: no cowfs daemon serves %s (mount it: %s mount -d %s)\n", what, h.Workspace, h.Cowfs, h.Workspace)
	}
	return fmt.Sprintf("cowfs: %s: %v\n", what, err)
}

func (h ClaudeHook) newID() string {
	if h.NewID != nil {
		return h.NewID()
	}
	return randomID()
}
