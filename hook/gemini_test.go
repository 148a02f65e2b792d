package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// Turns lists the fake's turns, for the Gemini hooks' numbering.
func (f *fakeDaemon) Turns(context.Context) (ctl.TurnList, error) {
	if f.err != nil {
		return ctl.TurnList{}, f.err
	}
	return ctl.TurnList{Turns: append([]ctl.Turn{}, f.turns...)}, nil
}

func geminiHookOn(f *fakeDaemon) GeminiHook {
	return GeminiHook{Turns: Turns{Daemon: f, Prefix: GeminiTurnPrefix}, Window: f, Workspace: "/ws", Cowfs: "/bin/cowfs"}
}

const geminiSID = "0123abcd-0000-4000-8000-000000000001"

func TestGeminiPromptsAndToolCalls(t *testing.T) {
	f := &fakeDaemon{}
	h := geminiHookOn(f)
	p := writeSession(t, t.TempDir(), sessionFile)
	in := GeminiInput{SessionID: geminiSID, TranscriptPath: p, Timestamp: "2026-12-06T07:22:10.253Z"}
	if r := h.Run(context.Background(), GeminiPrompt, in); len(r.Stdout) != 0 || r.Stderr != "" {
		t.Errorf("prompt: %+v; want a quiet turn", r)
	}
	in.ToolName = "write_file"
	h.Run(context.Background(), GeminiPreTool, in)
	// The CLI was killed: no end; the next prompt ends the turn first.
	h.Run(context.Background(), GeminiPrompt, in)
	h.Run(context.Background(), GeminiAgentEnd, in)
	h.Run(context.Background(), GeminiSessionEnd, in)
	if len(f.turns) != 2 || f.open != 0 {
		t.Fatalf("turns %+v, open %d; want two, closed", f.turns, f.open)
	}
	for i, tr := range f.turns {
		if want := fmt.Sprintf("gemini-0123abcd-%d", i+1); tr.ID != want || tr.Anchor != geminiSID+"/r2" {
			t.Errorf("turn %d: id %q anchor %q; want %s, %s/r2", i+1, tr.ID, tr.Anchor, want, geminiSID)
		}
	}
	if strings.Join(f.steps, " ") != "write_file@07:22:10.253" {
		t.Errorf("steps %v", f.steps)
	}
}

func TestGeminiPromptDenied(t *testing.T) {
	f := &fakeDaemon{err: fmt.Errorf("%w (socket /s)", ctl.ErrNotRunning)}
	h := geminiHookOn(f)
	in := GeminiInput{SessionID: geminiSID}
	var out geminiAnswer
	r := h.Run(context.Background(), GeminiPrompt, in)
	if err := json.Unmarshal(r.Stdout, &out); err != nil || out.Decision != "deny" || !strings.Contains(out.Reason, "/bin/cowfs mount -d /ws") {
		t.Errorf("no daemon: %s (%v); want the prompt denied, saying how to mount", r.Stdout, err)
	}
	for _, ev := range []string{GeminiPreTool, GeminiAgentEnd, GeminiSessionEnd} {
		if r := h.Run(context.Background(), ev, in); len(r.Stdout) != 0 || (ev != GeminiPreTool && r.Stderr != "") {
			t.Errorf("%s with no daemon: %+v", ev, r)
		}
	}

	f = &fakeDaemon{}
	f.BeginTurn(context.Background(), ctl.BeginTurnRequest{ID: "by-hand"})
	h = geminiHookOn(f)
	r = h.Run(context.Background(), GeminiPrompt, in)
	if json.Unmarshal(r.Stdout, &out) != nil || out.Decision != "deny" || !strings.Contains(out.Reason, "cowfs turn end") {
		t.Errorf("another's turn open: %s; want the prompt denied naming cowfs turn end", r.Stdout)
	}
	if r := h.Run(context.Background(), GeminiAgentEnd, in); f.open == 0 || !strings.Contains(r.Stderr, "left open") {
		t.Errorf("the agent's end ended another's turn (%q)", r.Stderr)
	}
}

func TestGeminiPromptGetsTheMarkersNote(t *testing.T) {
	f := &fakeDaemon{}
	h := geminiHookOn(f)
	in := GeminiInput{SessionID: geminiSID}
	h.Run(context.Background(), GeminiPrompt, in)
	h.Run(context.Background(), GeminiAgentEnd, in)
	f.markers = []ctl.Marker{{Turn: 1, Anchor: geminiSID + "/", Note: "[cowfs] files went back", CreatedAt: time.Unix(1, 0)}}
	f.turns[0].State = ctl.StateReverted
	var out geminiAnswer
	r := h.Run(context.Background(), GeminiPrompt, in)
	if err := json.Unmarshal(r.Stdout, &out); err != nil || out.HookSpecificOutput == nil || out.HookSpecificOutput.AdditionalContext != "[cowfs] files went back" {
		t.Errorf("prompt after a rollback: %s (%v); want the note as additionalContext", r.Stdout, err)
	}
	if f.turns[1].ID != "gemini-0123abcd-2" {
		t.Errorf("the turn after a reverted one is %q; want gemini-0123abcd-2, no id used twice", f.turns[1].ID)
	}
}
