package hook

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// promptInput is what Claude Code 2.1.328 sent a UserPromptSubmit hook
// (prompt and paths shortened).
const promptInput = `{"session_id":"e58a31a8-be1a-4271-918d-3e150d9c6a9e","transcript_path":"/root/.claude/projects/-ws/e58a31a8-be1a-4271-918d-3e150d9c6a9e.jsonl","cwd":"/ws","prompt_id":"9d2c4af6-9986-4dba-b7c0-fc554c366f6b","permission_mode":"acceptEdits","hook_event_name":"UserPromptSubmit","prompt":"PROMPT-ONE please"}`

// toolInput is what it sent a PreToolUse hook.
const toolInput = `{"session_id":"e58a31a8-be1a-4271-918d-3e150d9c6a9e","transcript_path":"/root/.claude/projects/-ws/e58a31a8-be1a-4271-918d-3e150d9c6a9e.jsonl","cwd":"/ws","prompt_id":"9d2c4af6-9986-4dba-b7c0-fc554c366f6b","permission_mode":"acceptEdits","effort":{"level":"medium"},"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo hi > a.txt","description":"write a"},"tool_use_id":"toolu_01AAA"}`

func claudeInput(t *testing.T, s string) ClaudeInput {
	t.Helper()
	in, err := ReadClaudeInput(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestClaudePromptBeginsATurn(t *testing.T) {
	f := &fakeDaemon{}
	h := ClaudeHook{Turns: Turns{Daemon: f, Prefix: ClaudeTurnPrefix}, Agent: &ctl.AgentScope{Pids: []uint32{42}}}
	r := h.Run(context.Background(), ClaudePrompt, claudeInput(t, promptInput))
	if r.Code != 0 || len(r.Stdout) != 0 {
		t.Fatalf("result %+v", r)
	}
	want := ctl.BeginTurnRequest{ID: "cc-9d2c4af6", Anchor: "e58a31a8-be1a-4271-918d-3e150d9c6a9e/9d2c4af6-9986-4dba-b7c0-fc554c366f6b"}
	if len(f.begun) != 1 || f.begun[0].ID != want.ID || f.begun[0].Anchor != want.Anchor || f.begun[0].Agent.Pids[0] != 42 {
		t.Fatalf("began %+v, want %+v", f.begun, want)
	}
}

func TestClaudePromptHearsMarkerNotes(t *testing.T) {
	f := &fakeDaemon{markers: []ctl.Marker{{Turn: 2, CreatedAt: time.Unix(7, 0), Note: "[cowfs] Messages from turn 2 on were removed"}}}
	h := ClaudeHook{Turns: Turns{Daemon: f, Prefix: ClaudeTurnPrefix, Delivered: filepath.Join(t.TempDir(), "d")}}
	r := h.Run(context.Background(), ClaudePrompt, claudeInput(t, promptInput))
	var out struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(r.Stdout, &out); err != nil {
		t.Fatalf("%q: %v", r.Stdout, err)
	}
	if out.HookSpecificOutput.HookEventName != ClaudePrompt || out.HookSpecificOutput.AdditionalContext != f.markers[0].Note {
		t.Fatalf("output %s", r.Stdout)
	}
}

func TestClaudePromptBlockedWithoutADaemon(t *testing.T) {
	f := &fakeDaemon{err: ctl.ErrNotRunning}
	h := ClaudeHook{Turns: Turns{Daemon: f, Prefix: ClaudeTurnPrefix}, Workspace: "/ws", Cowfs: "/usr/bin/cowfs"}
	r := h.Run(context.Background(), ClaudePrompt, claudeInput(t, promptInput))
	var out struct{ Decision, Reason string }
	if err := json.Unmarshal(r.Stdout, &out); err != nil {
		t.Fatalf("%q: %v", r.Stdout, err)
	}
	if r.Code != 0 || out.Decision != "block" || !strings.Contains(out.Reason, "/usr/bin/cowfs mount -d /ws") {
		t.Fatalf("result %+v", r)
	}
	// The other hooks let the agent go on.
	for _, ev := range []string{ClaudePreTool, ClaudeStop, ClaudeSessionEnd} {
		r := h.Run(context.Background(), ev, claudeInput(t, toolInput))
		if r.Code != 0 || len(r.Stdout) != 0 || !strings.Contains(r.Stderr, "mount -d") {
			t.Errorf("%s: %+v", ev, r)
		}
	}
}

func TestClaudeToolCallIsAStep(t *testing.T) {
	f := &fakeDaemon{}
	h := ClaudeHook{Turns: Turns{Daemon: f, Prefix: ClaudeTurnPrefix}}
	ctx := context.Background()
	h.Run(ctx, ClaudePrompt, claudeInput(t, promptInput))
	if r := h.Run(ctx, ClaudePreTool, claudeInput(t, toolInput)); r.Code != 0 || len(r.Stdout) != 0 {
		t.Fatalf("result %+v", r)
	}
	if len(f.steps) != 1 || f.steps[0] != "toolu_01AAA" || f.stepNames[0] != "Bash" {
		t.Fatalf("steps %v", f.steps)
	}
	h.Run(ctx, ClaudeStop, ClaudeInput{})
	if f.open != 0 {
		t.Fatal("Stop left the turn open")
	}
	// SessionEnd after Stop: nothing to end, nothing said.
	if r := h.Run(ctx, ClaudeSessionEnd, ClaudeInput{}); r.Stderr != "" || len(r.Stdout) != 0 {
		t.Fatalf("result %+v", r)
	}
}

func TestClaudeIDsWithoutPromptID(t *testing.T) {
	f := &fakeDaemon{}
	h := ClaudeHook{Turns: Turns{Daemon: f, Prefix: ClaudeTurnPrefix}, NewID: func() string { return "0badf00d" }}
	h.Run(context.Background(), ClaudePrompt, ClaudeInput{SessionID: "s1"})
	if f.begun[0].ID != "cc-0badf00d" || f.begun[0].Anchor != "s1" {
		t.Fatalf("began %+v", f.begun[0])
	}
	h.Run(context.Background(), ClaudePreTool, ClaudeInput{})
	h.Run(context.Background(), ClaudePreTool, ClaudeInput{ToolName: "Bash"})
	if f.steps[0] != "tool-0badf00d" || f.steps[1] != "Bash-0badf00d" {
		t.Fatalf("steps %v", f.steps)
	}
}

func TestClaudeForeignTurnBlocksThePrompt(t *testing.T) {
	f := &fakeDaemon{}
	f.BeginTurn(context.Background(), ctl.BeginTurnRequest{ID: "mine"})
	h := ClaudeHook{Turns: Turns{Daemon: f, Prefix: ClaudeTurnPrefix}}
	r := h.Run(context.Background(), ClaudePrompt, claudeInput(t, promptInput))
	if !strings.Contains(string(r.Stdout), `"decision":"block"`) || !strings.Contains(string(r.Stdout), "cowfs turn end") {
		t.Fatalf("result %s", r.Stdout)
	}
}

func TestClaudeResumePoint(t *testing.T) {
	path := filepath.Join("testdata", "claude-transcript.jsonl")
	const session = "e58a31a8-be1a-4271-918d-3e150d9c6a9e"
	for _, c := range []struct{ prompt, at string }{
		// The session's first prompt: nothing before it.
		{"9d2c4af6-9986-4dba-b7c0-fc554c366f6b", ""},
		// The second: the entry the first answer ended with.
		{"d5e587f2-1402-4364-94a2-ef2cfafb427d", "d0fc6653-6319-4490-96c4-603abfb2cb0c"},
		// A prompt resumed at that entry (--resume-session-at), after
		// the second's branch in the file.
		{"d551c01d-17f2-4275-9374-e0c5a3d04ee3", "d0fc6653-6319-4490-96c4-603abfb2cb0c"},
		// An anchor naming an entry: resume there.
		{"7d668917-84b6-4618-a4d1-ba998821d9af", "7d668917-84b6-4618-a4d1-ba998821d9af"},
	} {
		r, err := ClaudeResumePoint(session+"/"+c.prompt, path)
		if err != nil || r.At != c.at || r.Session != session {
			t.Errorf("prompt %s: %+v, %v; want at %q", c.prompt, r, err, c.at)
		}
	}
	r, _ := ClaudeResumePoint(session+"/d5e587f2-1402-4364-94a2-ef2cfafb427d", path)
	if got, want := r.Command(), "claude --resume "+session+" --resume-session-at d0fc6653-6319-4490-96c4-603abfb2cb0c"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if _, err := ClaudeResumePoint(session+"/00000000-0000-0000-0000-000000000000", path); !errors.Is(err, ErrPromptNotInTranscript) {
		t.Errorf("missing prompt: %v", err)
	}
	if _, err := ClaudeResumePoint("turn-17 anchor", path); err == nil {
		t.Error("an anchor not the hook's was taken")
	}
}

func TestClaudeTranscriptFound(t *testing.T) {
	dir := t.TempDir()
	if _, err := ClaudeTranscript(dir, "s1"); !errors.Is(err, ErrNoClaudeTranscript) {
		t.Fatalf("got %v", err)
	}
	p := filepath.Join(dir, "projects", "-ws", "s1.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ClaudeTranscript(dir, "s1"); err != nil || got != p {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestAgentAncestorSkipsShells(t *testing.T) {
	procs := map[int]struct {
		name string
		ppid int
	}{10: {"sh", 9}, 9: {"claude", 1}, 20: {"bash", 1}}
	info := func(pid int) (string, int, error) {
		p, ok := procs[pid]
		if !ok {
			return "", 0, errors.New("no such process")
		}
		return p.name, p.ppid, nil
	}
	if got := agentAncestor(10, info); got != 9 {
		t.Errorf("from sh under claude: %d", got)
	}
	if got := agentAncestor(20, info); got != 0 {
		t.Errorf("from a shell under init: %d", got)
	}
	if name, ppid, err := procInfo(1); err != nil || name == "" || ppid != 0 {
		t.Errorf("procInfo(1): %q %d %v", name, ppid, err)
	}
}
