package hook

// Gemini CLI (gemini*.go) reads hooks from the project's
// .gemini/settings.json (Gemini, settings.go) and runs them with the
// event's JSON on standard input, reading one JSON object back from
// standard output. Its events carry neither a prompt id nor a tool call
// id, so the ids are made here:
//
//   - BeforeAgent (a prompt) begins a turn with id gemini-SID8-N: the
//     session id's first 8 characters and N, one more than the highest
//     of the session's turns in the window. Its anchor is SID/MSG: the
//     session id and the id of the last message of the conversation
//     before the prompt, read from the session file the event names
//     (transcript_path, gemini_transcript.go). A rollback to before the
//     turn truncates the conversation right after MSG, the way the
//     CLI's own /rewind does (gemini_rewind.go), and `gemini --resume
//     SID` goes on from there. With no daemon, or a turn open that
//     these hooks did not begin, the prompt is denied with the reason;
//     the notes of markers left since the last prompt go to the model
//     as additionalContext.
//   - BeforeTool begins a step TOOL@HH:MM:SS.mmm: the tool's name and
//     the hook's time (UTC, from the event), distinct within a turn as
//     the CLI runs a turn's hooks one after another.
//   - AfterAgent and SessionEnd end the turn. A prompt cut short (the
//     CLI killed) fires neither; the next prompt ends its turn first.
//
// The CLI shows what a hook prints on standard error when it prints
// nothing on standard output, as a message to the person: the hooks
// say nothing there unless something went wrong.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// GeminiTurnPrefix starts the id of every turn the Gemini CLI hooks
// begin.
const GeminiTurnPrefix = "gemini-"

// Gemini CLI hook events cowfs uses, in the order they fire.
const (
	GeminiPrompt     = "BeforeAgent"
	GeminiPreTool    = "BeforeTool"
	GeminiAgentEnd   = "AfterAgent"
	GeminiSessionEnd = "SessionEnd"
)

// GeminiEvents are the events `cowfs integrate gemini` hooks.
var GeminiEvents = []string{GeminiPrompt, GeminiPreTool, GeminiAgentEnd, GeminiSessionEnd}

// GeminiInput is the part of a Gemini CLI hook's input cowfs reads.
type GeminiInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Event          string `json:"hook_event_name"`
	Timestamp      string `json:"timestamp"` // RFC 3339, UTC, milliseconds
	ToolName       string `json:"tool_name"` // BeforeTool
}

// ReadGeminiInput decodes a hook's standard input.
func ReadGeminiInput(r io.Reader) (GeminiInput, error) {
	var in GeminiInput
	b, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err != nil {
		return in, fmt.Errorf("reading the hook's input from Gemini CLI: %w", err)
	}
	return in, nil
}

// GeminiHook is one run of `cowfs hook gemini EVENT`.
type GeminiHook struct {
	Turns Turns
	// Window lists the turns, to number the session's; nil: no daemon.
	Window interface {
		Turns(ctx context.Context) (ctl.TurnList, error)
	}
	// Workspace and Cowfs (the binary's path) go into messages.
	Workspace, Cowfs string
	// Agent is the scope of the turns it begins; nil: the mount's
	// default.
	Agent *ctl.AgentScope
}

// geminiAnswer is what a hook prints for Gemini CLI: "deny" with a
// reason blocks a prompt; additionalContext goes to the model with it.
type geminiAnswer struct {
	Decision           string          `json:"decision,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	HookSpecificOutput *geminiSpecific `json:"hookSpecificOutput,omitempty"`
}

type geminiSpecific struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// Run handles event with the hook input in. The exit status is always
// 0: a prompt is denied in the JSON on Stdout, and nothing else may
// stop the agent.
func (h GeminiHook) Run(ctx context.Context, event string, in GeminiInput) Result {
	switch event {
	case GeminiPrompt:
		return h.prompt(ctx, in)
	case GeminiPreTool:
		if _, err := h.Turns.Step(ctx, GeminiStepID(in), in.ToolName); err != nil && !errors.Is(err, ErrNoTurn) {
			return Result{Stderr: fmt.Sprintf("cowfs: step %s not marked: %v\n", GeminiStepID(in), err)}
		}
		return Result{}
	case GeminiAgentEnd, GeminiSessionEnd:
		return h.end(ctx, event)
	}
	return Result{Stderr: fmt.Sprintf("cowfs hook gemini: %s is not an event cowfs uses (it uses %s); nothing done\n", event, strings.Join(GeminiEvents, ", "))}
}

func (h GeminiHook) prompt(ctx context.Context, in GeminiInput) Result {
	id, err := h.turnID(ctx, in.SessionID)
	if err != nil {
		return h.deny(err)
	}
	b, err := h.Turns.Begin(ctx, ctl.BeginTurnRequest{ID: id, Anchor: GeminiAnchor(in), Agent: h.Agent})
	if err != nil {
		return h.deny(err)
	}
	var r Result
	if b.Warning != "" {
		r.Stderr = "cowfs: " + b.Warning + "\n"
	}
	if len(b.Notes) > 0 {
		r.Stdout, _ = json.Marshal(geminiAnswer{HookSpecificOutput: &geminiSpecific{
			HookEventName: GeminiPrompt, AdditionalContext: strings.Join(b.Notes, "\n")}})
	}
	return r
}

// deny refuses the prompt: no turn could begin, and the agent's changes
// would belong to none.
func (h GeminiHook) deny(err error) Result {
	why := refusal(err, h.Cowfs, h.Workspace, "gemini")
	out, _ := json.Marshal(geminiAnswer{Decision: "deny", Reason: "cowfs: " + why})
	return Result{Stdout: out}
}

func (h GeminiHook) end(ctx context.Context, event string) Result {
	_, err := h.Turns.End(ctx)
	var f *ForeignTurnError
	switch {
	case err == nil, errors.Is(err, ErrNoTurn):
	case errors.Is(err, ctl.ErrNotRunning):
		// No daemon, no turn: the prompt was denied and said why.
	case errors.As(err, &f):
		return Result{Stderr: fmt.Sprintf("cowfs: %s: turn %d was not begun by these hooks; left open\n", event, f.Turn.Num)}
	default:
		return Result{Stderr: fmt.Sprintf("cowfs: %s: the turn was not ended: %v\n", event, err)}
	}
	return Result{}
}

// GeminiAnchor is the anchor of a prompt's turn: the session id, and
// after a slash the id of the conversation's last message before the
// prompt ("" if it has none). Without a session file to read, the
// anchor is the session id alone, and a rollback cannot say where the
// conversation goes back to.
func GeminiAnchor(in GeminiInput) string {
	if in.TranscriptPath == "" {
		return in.SessionID
	}
	tr, err := readTranscript(in.TranscriptPath)
	if err != nil {
		return in.SessionID
	}
	return in.SessionID + "/" + tr.lastMessage()
}

// geminiSessionPrefix starts the ids of one session's turns.
func geminiSessionPrefix(sid string) string {
	short := sid
	if len(short) > 8 {
		short = short[:8]
	}
	return GeminiTurnPrefix + short + "-"
}

// turnID numbers the session's turns: one more than the highest of
// them in the window (a reverted one too, so no id is used twice).
func (h GeminiHook) turnID(ctx context.Context, sid string) (string, error) {
	if h.Window == nil {
		_, err := h.Turns.Daemon.Status(ctx)
		if err == nil {
			err = errors.New("no list of turns")
		}
		return "", err
	}
	list, err := h.Window.Turns(ctx)
	if err != nil {
		return "", err
	}
	prefix, n := geminiSessionPrefix(sid), uint64(0)
	for _, t := range list.Turns {
		if rest, ok := strings.CutPrefix(t.ID, prefix); ok {
			if k, err := strconv.ParseUint(rest, 10, 64); err == nil && k > n {
				n = k
			}
		}
	}
	return prefix + strconv.FormatUint(n+1, 10), nil
}

// GeminiStepID names a tool call's step: the tool and the time its
// hook ran (Gemini CLI gives hooks no call id).
func GeminiStepID(in GeminiInput) string {
	name := in.ToolName
	if name == "" || !printableLabel(name) {
		name = "tool"
	}
	t, err := time.Parse(time.RFC3339Nano, in.Timestamp)
	if err != nil {
		t = time.Now()
	}
	return name + "@" + t.UTC().Format("15:04:05.000")
}
