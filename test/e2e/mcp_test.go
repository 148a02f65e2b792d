package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cowfs/cowfs/ctl"
)

// mcpClient is a real MCP client (the Go SDK's) talking over stdio to
// `cowfs mcp -w WS`, the built binary, as Claude Code would.
type mcpClient struct {
	t    *testing.T
	sess *mcp.ClientSession
}

func (w *workspace) mcp(t *testing.T) *mcpClient {
	t.Helper()
	cmd := exec.Command(cowfsBin, "mcp", "-w", w.mnt)
	cmd.Env = w.env()
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "cowfs-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to cowfs mcp: %v", err)
	}
	// Closing the session closes the server's stdin: it exits, and the
	// transport waits for it (and ends it if it does not).
	t.Cleanup(func() { sess.Close() })
	return &mcpClient{t: t, sess: sess}
}

// call calls a tool and fails the test on a protocol error (a tool
// error is a result).
func (m *mcpClient) call(name string, args map[string]any) *mcp.CallToolResult {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := m.sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.t.Fatalf("tool %s %v: protocol error: %v", name, args, err)
	}
	return res
}

// ok calls a tool that must succeed, decodes its structured result into
// out (if not nil) and returns its text.
func (m *mcpClient) ok(name string, args map[string]any, out any) string {
	m.t.Helper()
	res := m.call(name, args)
	text := resultText(res)
	if res.IsError {
		m.t.Fatalf("tool %s %v failed: %s", name, args, text)
	}
	if text == "" {
		m.t.Errorf("tool %s %v: no text content", name, args)
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			m.t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			m.t.Fatalf("tool %s: structured content %s: %v", name, b, err)
		}
	}
	return text
}

// refused calls a tool that must fail as a tool error, and returns its
// message.
func (m *mcpClient) refused(name string, args map[string]any) string {
	m.t.Helper()
	res := m.call(name, args)
	text := resultText(res)
	if !res.IsError {
		m.t.Fatalf("tool %s %v succeeded, want a tool error: %s", name, args, text)
	}
	return text
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// mustSay fails unless text holds every one of parts.
func mustSay(t *testing.T, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%s: %q does not say %q", what, text, p)
		}
	}
}

// TestMCPToolList: the tools and their annotations, as a client sees
// them: the destructive ones marked so, the others read-only.
func TestMCPToolList(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	m := w.mcp(t)
	res, err := m.sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	destructive := map[string]bool{"rollback": true, "undo": true, "unrevert": true}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		a := tool.Annotations
		if a == nil {
			t.Errorf("tool %s has no annotations", tool.Name)
			continue
		}
		if destructive[tool.Name] {
			if a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
				t.Errorf("tool %s: annotations %+v, want destructive, not read-only", tool.Name, a)
			}
		} else if !a.ReadOnlyHint {
			t.Errorf("tool %s: annotations %+v, want read-only", tool.Name, a)
		}
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s: no description or input schema", tool.Name)
		}
	}
	sort.Strings(names)
	want := []string{"cat", "diff", "log", "markers", "rollback", "rollback_preview", "show", "undo", "unrevert", "unrevert_preview"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

// mcpTurns makes two turns: t1 (steps s1, s2) creates a.txt and d/b.txt;
// t2 changes a.txt and removes keep.txt.
func mcpTurns(w *workspace) {
	w.t.Helper()
	w.cowfs("turn", "begin", "--id", "t1", "--anchor", "msg-1")
	w.cowfs("turn", "step", "s1")
	w.sh("echo one > a.txt")
	w.cowfs("turn", "step", "s2")
	w.sh("mkdir d && echo bee > d/b.txt")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin", "--id", "t2", "--anchor", "msg-2")
	w.sh("echo two > a.txt && rm keep.txt")
	w.cowfs("turn", "end")
}

// TestMCPReadTools: log, show (with steps), diff (with a paths filter
// and a step), cat at a turn, over MCP after real turns; a daemon's
// error comes back as a tool error with its message.
func TestMCPReadTools(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "kept\n"})
	w.mount()
	mcpTurns(w)
	m := w.mcp(t)

	var log struct {
		Turns    []ctl.Turn `json:"turns"`
		OpenTurn *ctl.Turn  `json:"open_turn"`
	}
	text := m.ok("log", nil, &log)
	if len(log.Turns) != 2 || log.Turns[0].ID != "t1" || log.Turns[1].ID != "t2" || log.OpenTurn != nil {
		t.Errorf("log: %+v, want turns t1 and t2, none open", log)
	}
	mustSay(t, "log", text, "turn 1 (id t1, anchor msg-1): closed", "turn 2 (id t2")

	var show struct {
		Num     uint64       `json:"num"`
		Changes []ctl.Change `json:"changes"`
		Steps   []struct {
			Step  string   `json:"step"`
			Paths []string `json:"paths"`
		} `json:"steps"`
	}
	text = m.ok("show", map[string]any{"turn": "t1"}, &show)
	steps := map[string][]string{}
	for _, s := range show.Steps {
		steps[s.Step] = s.Paths
	}
	if show.Num != 1 || !reflect.DeepEqual(steps, map[string][]string{"s1": {"a.txt"}, "s2": {"d", "d/b.txt"}}) {
		t.Errorf("show t1: turn %d, steps %v; want turn 1, s1: a.txt, s2: d, d/b.txt", show.Num, steps)
	}
	mustSay(t, "show t1", text, "step s1:\n  created a.txt", "step s2:", "created d/b.txt")
	m.ok("show", map[string]any{"turn": 2}, &show) // a number, as JSON
	if show.Num != 2 || len(show.Changes) != 2 {
		t.Errorf("show 2: %+v, want turn 2 with a.txt and keep.txt", show)
	}

	var diff struct {
		Files []ctl.DiffFile `json:"files"`
	}
	text = m.ok("diff", map[string]any{"turn": 2, "paths": []string{"a.txt"}}, &diff)
	if len(diff.Files) != 1 || diff.Files[0].Path != "a.txt" || !strings.Contains(diff.Files[0].Diff, "-one\n+two") {
		t.Errorf("diff 2 a.txt: %+v, want a.txt's diff alone", diff.Files)
	}
	mustSay(t, "diff 2 a.txt", text, "-one", "+two")
	m.ok("diff", map[string]any{"turn": "t1", "step": "s2"}, &diff)
	if len(diff.Files) != 2 || diff.Files[1].Path != "d/b.txt" {
		t.Errorf("diff t1 step s2: %+v, want d and d/b.txt", diff.Files)
	}
	m.ok("diff", map[string]any{"turn": 1, "to": "now", "paths": []string{w.path("d")}}, &diff)
	if len(diff.Files) != 2 {
		t.Errorf("diff 1..now under d (an absolute path): %+v, want d and d/b.txt", diff.Files)
	}

	var cat struct {
		Content string `json:"content"`
		Size    int64  `json:"size"`
	}
	text = m.ok("cat", map[string]any{"turn": 2, "path": "a.txt"}, &cat)
	if cat.Content != "one\n" || cat.Size != 4 {
		t.Errorf("cat a.txt at 2: %+v, want one", cat)
	}
	mustSay(t, "cat", text, "one\n")
	m.ok("cat", map[string]any{"turn": "t2", "path": "keep.txt"}, &cat)
	if cat.Content != "kept\n" {
		t.Errorf("cat keep.txt at t2: %+v, want kept", cat)
	}

	msg := m.refused("show", map[string]any{"turn": 99})
	mustSay(t, "show 99", msg, "not_found")
	msg = m.refused("cat", map[string]any{"turn": 1, "path": "a.txt"})
	mustSay(t, "cat a.txt at 1 (before it existed)", msg, "not_found")
}

// rollbackResult is the part of a rollback's result the tests read.
type mcpRollback struct {
	Target   uint64      `json:"target"`
	Complete bool        `json:"complete"`
	Marker   *ctl.Marker `json:"marker"`
	Token    string      `json:"token"`
	Paths    []ctl.PathAction
}

// TestMCPRollback: no rollback without a preview's token (or confirm);
// a token whose plan changed since, or from another preview, is
// refused; with the right token the rollback is done and leaves a
// marker; unrevert needs its own token; undo rolls back the latest
// turn; confirm acts without a preview.
func TestMCPRollback(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "kept\n"})
	w.mount()
	mcpTurns(w)
	m := w.mcp(t)
	files := func() string {
		return w.sh("for f in a.txt keep.txt d/b.txt; do [ -e $f ] && echo $f: $(cat $f) || echo $f: -; done")
	}
	after2 := files()

	msg := m.refused("rollback", map[string]any{"turn": 2})
	mustSay(t, "rollback without token", msg, "rollback_preview", "confirm")
	if got := files(); got != after2 {
		t.Fatalf("a refused rollback changed the workspace: %s", got)
	}

	var plan mcpRollback
	text := m.ok("rollback_preview", map[string]any{"turn": 2}, &plan)
	if plan.Target != 2 || plan.Token == "" || len(plan.Paths) != 2 {
		t.Fatalf("preview of rollback 2: %+v, want target 2, a token, a.txt and keep.txt", plan)
	}
	mustSay(t, "preview", text, "restore a.txt", "recover keep.txt", plan.Token)

	// The plan changes: a turn changes another path.
	w.cowfs("turn", "begin", "--id", "t3")
	w.sh("echo three > c.txt")
	w.cowfs("turn", "end")
	after3 := files()
	msg = m.refused("rollback", map[string]any{"turn": 2, "token": plan.Token})
	mustSay(t, "rollback with a stale token", msg, "not what the preview", "preview again (rollback_preview")
	if got := files(); got != after3 || !onDisk(w.path("c.txt")) {
		t.Fatalf("a rollback with a stale token changed the workspace: %s", got)
	}

	var plan3 mcpRollback
	m.ok("rollback_preview", map[string]any{"turn": "t3"}, &plan3)
	msg = m.refused("rollback", map[string]any{"turn": 2, "token": plan3.Token})
	mustSay(t, "rollback 2 with turn 3's token", msg, "not from a preview of a rollback to before turn 2")
	msg = m.refused("rollback", map[string]any{"turn": 3, "token": plan3.Token, "force": true})
	mustSay(t, "rollback 3 --force with the token of rollback 3", msg, "not from a preview")

	m.ok("rollback_preview", map[string]any{"turn": 2}, &plan)
	var done mcpRollback
	text = m.ok("rollback", map[string]any{"turn": 2, "token": plan.Token}, &done)
	if !done.Complete || done.Target != 2 || done.Marker == nil || done.Marker.Anchor != "msg-2" {
		t.Errorf("rollback 2: %+v, want complete with a marker at msg-2", done)
	}
	mustSay(t, "rollback", text, "rolled back to before turn 2", "marker: turn 2", "unrevert")
	if got := files(); got != "a.txt: one\nkeep.txt: kept\nd/b.txt: bee\n" || onDisk(w.path("c.txt")) {
		t.Errorf("after rollback 2: %s, c.txt there: %v; want the state turn 2 began with", got, onDisk(w.path("c.txt")))
	}
	var markers ctl.MarkerList
	m.ok("markers", nil, &markers)
	if len(markers.Markers) != 1 || markers.Markers[0].Turn != 2 || markers.Markers[0].Anchor != "msg-2" {
		t.Errorf("markers: %+v, want the one at turn 2", markers)
	}
	msg = m.refused("rollback", map[string]any{"turn": 2, "token": plan.Token})
	mustSay(t, "the same token again", msg, "not what the preview")

	// Unrevert: its own preview and token.
	msg = m.refused("unrevert", nil)
	mustSay(t, "unrevert without token", msg, "unrevert_preview")
	msg = m.refused("unrevert", map[string]any{"token": plan.Token})
	mustSay(t, "unrevert with a rollback's token", msg, "not from a preview of an unrevert")
	var up struct {
		Reverted []ctl.Turn `json:"reverted"`
		Token    string     `json:"token"`
	}
	m.ok("unrevert_preview", nil, &up)
	if len(up.Reverted) != 2 || up.Token == "" {
		t.Errorf("unrevert preview: %+v, want turns 2 and 3 reverted and a token", up)
	}
	var un mcpRollback
	m.ok("unrevert", map[string]any{"token": up.Token}, &un)
	if !un.Complete {
		t.Errorf("unrevert: %+v", un)
	}
	if got := files(); got != after3 || !onDisk(w.path("c.txt")) {
		t.Errorf("after unrevert: %s, want as after turn 3:\n%s", got, after3)
	}
	m.ok("markers", nil, &markers)
	if len(markers.Markers) != 0 {
		t.Errorf("markers after unrevert: %+v, want none", markers)
	}
	msg = m.refused("unrevert", map[string]any{"token": up.Token})
	mustSay(t, "unrevert with a used token", msg, "nothing to unrevert")

	// Undo: the latest turn, with the token of a preview without a turn.
	var undoPlan mcpRollback
	m.ok("rollback_preview", nil, &undoPlan)
	if undoPlan.Target != 3 {
		t.Errorf("preview without a turn: target %d, want 3 (the latest)", undoPlan.Target)
	}
	m.ok("undo", map[string]any{"token": undoPlan.Token}, &done)
	if done.Target != 3 || onDisk(w.path("c.txt")) {
		t.Errorf("undo: target %d, c.txt there: %v; want turn 3 undone", done.Target, onDisk(w.path("c.txt")))
	}
	if got := files(); got != after3 {
		t.Errorf("undo of turn 3 changed other paths: %s", got)
	}

	// confirm: the user's word, no preview.
	m.ok("rollback", map[string]any{"turn": 1, "confirm": true}, &done)
	if done.Target != 1 || onDisk(w.path("a.txt")) || !onDisk(w.path("keep.txt")) {
		t.Errorf("rollback 1 with confirm: %+v; a.txt there: %v", done, onDisk(w.path("a.txt")))
	}

	// A daemon's refusal is a tool error with its message.
	msg = m.refused("rollback", map[string]any{"turn": 99, "confirm": true})
	mustSay(t, "rollback 99", msg, "not_found")
}

// TestMCPRefusedWhileTurnOpen: with a turn open, previews, rollbacks,
// undo and unrevert are refused, saying which turn and how to end it,
// and nothing changes.
func TestMCPRefusedWhileTurnOpen(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "kept\n"})
	w.mount()
	mcpTurns(w)
	m := w.mcp(t)
	var plan mcpRollback
	m.ok("rollback_preview", map[string]any{"turn": 2}, &plan)
	var done mcpRollback
	m.ok("rollback", map[string]any{"turn": 2, "confirm": true}, &done)
	var up struct {
		Token string `json:"token"`
	}
	m.ok("unrevert_preview", nil, &up)

	w.cowfs("turn", "begin", "--id", "open-one")
	w.sh("echo four > a.txt")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"rollback_preview", map[string]any{"turn": 1}},
		{"rollback", map[string]any{"turn": 1, "confirm": true}},
		{"undo", map[string]any{"confirm": true}},
		{"unrevert_preview", nil},
		{"unrevert", map[string]any{"token": up.Token}},
		{"unrevert", map[string]any{"confirm": true}},
	} {
		msg := m.refused(c.tool, c.args)
		mustSay(t, c.tool+" with a turn open", msg, "turn 3 (id open-one) is open", "cowfs turn end -w "+w.mnt)
	}
	if got := w.sh("cat a.txt"); got != "four\n" {
		t.Errorf("a.txt: %q, want the open turn's four", got)
	}
	var log struct {
		OpenTurn *ctl.Turn `json:"open_turn"`
	}
	text := m.ok("log", nil, &log)
	if log.OpenTurn == nil || log.OpenTurn.ID != "open-one" {
		t.Errorf("log: open turn %+v, want open-one", log.OpenTurn)
	}
	mustSay(t, "log", text, "turn 3 is open")
	w.cowfs("turn", "end")
}

// TestMCPOffline: with no daemon, each tool call opens the journal for
// the call, as the CLI's offline commands do, and lets it go, so the
// workspace can be mounted again between calls.
func TestMCPOffline(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "kept\n"})
	w.mount()
	mcpTurns(w)
	w.cowfs("umount")
	m := w.mcp(t)
	var log struct {
		Turns []ctl.Turn `json:"turns"`
	}
	m.ok("log", nil, &log)
	if len(log.Turns) != 2 {
		t.Errorf("offline log: %+v, want two turns", log.Turns)
	}
	var plan mcpRollback
	m.ok("rollback_preview", nil, &plan)
	m.ok("undo", map[string]any{"token": plan.Token}, nil)
	if got := w.sh("cat a.txt keep.txt"); got != "one\nkept\n" {
		t.Errorf("after an offline undo: %q", got)
	}
	w.mount() // the journal is free between calls
	m.ok("log", nil, &log)
	if len(log.Turns) != 2 || log.Turns[1].State != ctl.StateReverted {
		t.Errorf("log through the daemon: %+v, want turn 2 reverted", log.Turns)
	}
}

// onDisk reports whether path names something (not following a final
// symlink).
func onDisk(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
