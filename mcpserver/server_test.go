package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

// fakeDaemon is a ctl.Service whose plan and open turn a test sets, and
// which counts the rollbacks and unreverts it does.
type fakeDaemon struct {
	mu        sync.Mutex
	open      *ctl.Turn
	plan      []ctl.PathAction
	rollbacks int // done, not dry
	unreverts int
	reverted  bool
}

func (f *fakeDaemon) Status(context.Context) (ctl.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := ctl.Status{Workspace: "/ws", OpenTurn: f.open}
	if f.reverted {
		st.Unrevertable = 1
	}
	return st, nil
}

func (f *fakeDaemon) Turns(context.Context) (ctl.TurnList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	state := ctl.StateClosed
	if f.reverted {
		state = ctl.StateReverted
	}
	return ctl.TurnList{Turns: []ctl.Turn{{Num: 1, ID: "t1", State: ctl.StateClosed}, {Num: 2, ID: "t2", State: state}}}, nil
}

func (f *fakeDaemon) Turn(_ context.Context, ref, _ string) (ctl.TurnDetail, error) {
	if ref != "1" && ref != "t1" {
		return ctl.TurnDetail{}, ctl.Errorf(ctl.CodeNotFound, "no turn %s", ref)
	}
	t0 := time.Unix(1000, 0)
	return ctl.TurnDetail{Turn: ctl.Turn{Num: 1, ID: "t1", State: ctl.StateClosed, BeganAt: t0, EndedAt: &t0, ChangedPaths: 3},
		Changes: []ctl.Change{
			{Path: "a", Kind: "created", Type: "file", Step: "s2", Time: t0.Add(2), Command: "sh"},
			{Path: "b", Kind: "renamed", From: "z", Type: "file", Step: "s1", Time: t0.Add(1), Command: "mv"},
			{Path: "c", Kind: "modified", Type: "file", Step: "s1", Time: t0.Add(3), Agent: ctl.NotAgent()},
		}}, nil
}

func (f *fakeDaemon) Content(_ context.Context, at, path string) (io.ReadCloser, error) {
	if path == "bin" {
		return io.NopCloser(strings.NewReader("\x7fELF\x00\x01")), nil
	}
	return io.NopCloser(strings.NewReader("content of " + path + " at " + at)), nil
}

func (f *fakeDaemon) Rollback(_ context.Context, req ctl.RollbackRequest) (ctl.RollbackResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.To != "2" {
		return ctl.RollbackResult{}, ctl.Errorf(ctl.CodeNotFound, "no turn %s", req.To)
	}
	res := ctl.RollbackResult{Target: 2, DryRun: req.DryRun, Paths: append([]ctl.PathAction{}, f.plan...), Complete: true}
	if !req.DryRun {
		f.rollbacks++
		f.reverted = true
		res.Marker = &ctl.Marker{Turn: 2, Note: "n", Replaces: []ctl.Marker{{Turn: 3, Note: "m"}}}
	}
	return res, nil
}

func (f *fakeDaemon) Unrevert(context.Context, ctl.UnrevertRequest) (ctl.RollbackResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unreverts++
	f.reverted = false
	return ctl.RollbackResult{Target: 2, Unrevert: true, Paths: []ctl.PathAction{}, Complete: true}, nil
}

func (f *fakeDaemon) Markers(context.Context) (ctl.MarkerList, error) {
	return ctl.MarkerList{Markers: []ctl.Marker{{Turn: 2, Note: "n", Replaces: []ctl.Marker{{Turn: 3, Note: "m"}}}}}, nil
}

func (f *fakeDaemon) Diff(_ context.Context, req ctl.DiffRequest) (ctl.Diff, error) {
	return ctl.Diff{From: "turn 1", To: "end of turn 1", Files: []ctl.DiffFile{
		{Path: "a", Status: "created", Diff: "+a\n", Added: 1},
		{Path: "d/b", Status: "modified", Diff: strings.Repeat("+b\n", maxDiffText/3+1)},
		{Path: "d/c", Status: "modified", Diff: "+c\n"},
	}}, nil
}

var errUnused = errors.New("not used by the MCP server")

func (f *fakeDaemon) BeginTurn(context.Context, ctl.BeginTurnRequest) (ctl.Turn, error) {
	return ctl.Turn{}, errUnused
}
func (f *fakeDaemon) EndTurn(context.Context) (ctl.Turn, error) { return ctl.Turn{}, errUnused }
func (f *fakeDaemon) BeginStep(context.Context, ctl.StepRequest) (ctl.StepStarted, error) {
	return ctl.StepStarted{}, errUnused
}
func (f *fakeDaemon) Events(context.Context, uint64, bool, func(ctl.Event) error) error {
	return errUnused
}
func (f *fakeDaemon) Shutdown(context.Context) error            { return errUnused }
func (f *fakeDaemon) Purge(context.Context) (ctl.Purged, error) { return ctl.Purged{}, errUnused }
func (f *fakeDaemon) Steps(context.Context, string) (ctl.StepList, error) {
	return ctl.StepList{}, errUnused
}
func (f *fakeDaemon) Outside(context.Context) (ctl.OutsideChanges, error) {
	return ctl.OutsideChanges{}, errUnused
}

// session serves d on a socket, an MCP server for it, and returns a
// client session connected to that server in memory.
func session(t *testing.T, d *fakeDaemon) *mcp.ClientSession {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := ctl.NewServer(d, nil)
	go srv.Serve(ln)
	t.Cleanup(srv.Close)
	s, err := New(Options{Workspace: "/ws", Dial: func(context.Context) (*ctl.Client, func(), error) {
		return ctl.NewClient(sock), func() {}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, st); close(done) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); <-done })
	return cs
}

// call calls a tool; a protocol error (such as an output that does not
// match the tool's schema) fails the test.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (text string, structured map[string]any, isError bool) {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	for _, c := range res.Content {
		text += c.(*mcp.TextContent).Text
	}
	structured, _ = res.StructuredContent.(map[string]any)
	return text, structured, res.IsError
}

func TestDestructiveNeedTokenOrConfirm(t *testing.T) {
	d := &fakeDaemon{plan: []ctl.PathAction{{Path: "a", Action: ctl.ActionRestore, Type: "file"}}}
	cs := session(t, d)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"rollback", map[string]any{"turn": 2}}, {"undo", nil}} {
		text, _, isErr := call(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(text, "rollback_preview") || !strings.Contains(text, "confirm") {
			t.Errorf("%s without token: error %v, %q; want refused, naming rollback_preview and confirm", c.tool, isErr, text)
		}
	}
	if d.rollbacks != 0 {
		t.Fatalf("%d rollbacks done without a token", d.rollbacks)
	}
	if _, _, isErr := call(t, cs, "rollback", map[string]any{"turn": 2, "confirm": true}); isErr || d.rollbacks != 1 {
		t.Fatalf("rollback with confirm: error %v, %d rollbacks; want done", isErr, d.rollbacks)
	}
	text, _, isErr := call(t, cs, "unrevert", nil)
	if !isErr || !strings.Contains(text, "unrevert_preview") || d.unreverts != 0 {
		t.Errorf("unrevert without token: error %v, %q, %d unreverts; want refused", isErr, text, d.unreverts)
	}
	_, up, _ := call(t, cs, "unrevert_preview", nil)
	if _, _, isErr := call(t, cs, "unrevert", map[string]any{"token": up["token"]}); isErr || d.unreverts != 1 {
		t.Errorf("unrevert with the preview's token: error %v, %d unreverts; want done", isErr, d.unreverts)
	}
}

func TestStaleTokenRefused(t *testing.T) {
	d := &fakeDaemon{plan: []ctl.PathAction{{Path: "a", Action: ctl.ActionRestore, Type: "file"}}}
	cs := session(t, d)
	_, p, _ := call(t, cs, "rollback_preview", map[string]any{"turn": "2"})
	token, _ := p["token"].(string)
	if !strings.HasPrefix(token, "rollback-2-") {
		t.Fatalf("preview token %q", token)
	}
	d.mu.Lock()
	d.plan = append(d.plan, ctl.PathAction{Path: "b", Action: ctl.ActionSkip, Reason: "changed outside turns", Type: "file"})
	d.mu.Unlock()
	text, _, isErr := call(t, cs, "rollback", map[string]any{"turn": 2, "token": token})
	if !isErr || !strings.Contains(text, "preview again") || d.rollbacks != 0 {
		t.Fatalf("rollback with a stale token: error %v, %q, %d rollbacks; want refused", isErr, text, d.rollbacks)
	}
	text, _, isErr = call(t, cs, "rollback", map[string]any{"turn": 2, "token": token, "force": true})
	if !isErr || !strings.Contains(text, `not from a preview`) || d.rollbacks != 0 {
		t.Fatalf("rollback --force with a token of a preview without: error %v, %q; want refused", isErr, text)
	}
	_, p, _ = call(t, cs, "rollback_preview", map[string]any{"turn": 2})
	if _, _, isErr := call(t, cs, "undo", map[string]any{"token": p["token"]}); isErr || d.rollbacks != 1 {
		t.Fatalf("undo with a fresh token: error %v, %d rollbacks; want done", isErr, d.rollbacks)
	}

	// A token is the issuing server's: another cannot verify it, even
	// for the same plan.
	d.mu.Lock()
	d.reverted = false
	d.mu.Unlock()
	other := session(t, d)
	text, _, isErr = call(t, other, "rollback", map[string]any{"turn": 2, "token": p["token"]})
	if !isErr || !strings.Contains(text, "earlier cowfs mcp process") || d.rollbacks != 1 {
		t.Errorf("another server's token: error %v, %q; want refused", isErr, text)
	}
}

func TestOpenTurnRefused(t *testing.T) {
	d := &fakeDaemon{open: &ctl.Turn{Num: 7, ID: "call-7", State: ctl.StateOpen}, reverted: true}
	cs := session(t, d)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"rollback_preview", nil},
		{"rollback", map[string]any{"turn": 2, "confirm": true}},
		{"undo", map[string]any{"confirm": true}},
		{"unrevert_preview", nil},
		{"unrevert", map[string]any{"confirm": true}},
		{"unrevert", nil},
	} {
		text, _, isErr := call(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(text, "turn 7 (id call-7) is open") || !strings.Contains(text, "cowfs turn end -w /ws") {
			t.Errorf("%s with a turn open: error %v, %q; want refused, saying how to end it", c.tool, isErr, text)
		}
	}
	if d.rollbacks != 0 || d.unreverts != 0 {
		t.Errorf("%d rollbacks, %d unreverts with a turn open", d.rollbacks, d.unreverts)
	}
}

func TestDaemonErrorIsToolError(t *testing.T) {
	cs := session(t, &fakeDaemon{})
	text, _, isErr := call(t, cs, "show", map[string]any{"turn": 9})
	if !isErr || text != "cowfs daemon: not_found: no turn 9" {
		t.Errorf("show 9: error %v, %q; want the daemon's not_found", isErr, text)
	}
	text, _, isErr = call(t, cs, "rollback", map[string]any{"turn": 5, "confirm": true})
	if !isErr || !strings.Contains(text, "not_found: no turn 5") {
		t.Errorf("rollback 5: error %v, %q; want the daemon's not_found", isErr, text)
	}
}

// TestReadTools checks each read-only tool's result against its output
// schema (the SDK refuses a result that does not match) and its text.
func TestReadTools(t *testing.T) {
	cs := session(t, &fakeDaemon{})
	text, s, _ := call(t, cs, "show", map[string]any{"turn": 1})
	if want := "step s1:\n  renamed z -> b (0 B journaled; mv pid 0)\n  modified c (0 B journaled; pid 0, not the agent's)\nstep s2:\n  created a"; !strings.Contains(text, want) {
		t.Errorf("show text:\n%s\nwant it to hold\n%s", text, want)
	}
	if steps, _ := s["steps"].([]any); len(steps) != 2 {
		t.Errorf("show: steps %v, want s1 and s2", s["steps"])
	}
	text, s, _ = call(t, cs, "diff", map[string]any{"turn": 1, "paths": []string{"/ws/d/"}})
	files, _ := s["files"].([]any)
	if len(files) != 2 || s["cut"] != true || !strings.Contains(text, "+c\n") || strings.Contains(text, "+a\n") {
		t.Errorf("diff under d: %d files, cut %v, text:\n%s\nwant d/b cut, d/c shown, a left out", len(files), s["cut"], text)
	}
	text, _, _ = call(t, cs, "cat", map[string]any{"turn": "t1", "path": "/ws/x/y"})
	if !strings.Contains(text, "content of x/y at t1") {
		t.Errorf("cat: %q", text)
	}
	text, s, _ = call(t, cs, "cat", map[string]any{"turn": 1, "path": "bin"})
	if s["binary"] != true || s["size"] != 6.0 || s["content"] != nil || !strings.Contains(text, "binary, not shown") {
		t.Errorf("cat of a binary file: %v, %q", s, text)
	}
	for _, tool := range []string{"log", "markers"} {
		if text, _, isErr := call(t, cs, tool, nil); isErr {
			t.Errorf("%s: %s", tool, text)
		}
	}
}

func TestSelected(t *testing.T) {
	for _, c := range []struct {
		filter []string
		path   string
		want   bool
	}{
		{nil, "a", true},
		{[]string{"a"}, "a", true},
		{[]string{"a"}, "ab", false},
		{[]string{"a"}, "a/b", true},
		{[]string{"a/"}, "a/b", true},
		{[]string{"."}, "x", true},
		{[]string{"b", "c/d"}, "c/d/e", true},
	} {
		if got := selected(c.filter, c.path); got != c.want {
			t.Errorf("selected(%q, %q) = %v", c.filter, c.path, got)
		}
	}
}

func TestRelative(t *testing.T) {
	s := &Server{opts: Options{Workspace: "/ws"}}
	for in, want := range map[string]string{"/ws/a/b": "a/b", "./a": "a", "a/../b": "b", "/wsx/a": "/wsx/a", "/ws": "."} {
		if got := s.relative(in); got != want {
			t.Errorf("relative(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTrimPartialRune(t *testing.T) {
	s := "aé"[:2] // the cut split é
	if got := trimPartialRune(s, true); got != "a" {
		t.Errorf("trimPartialRune(%q) = %q", s, got)
	}
	if got := trimPartialRune("aé", true); got != "aé" {
		t.Errorf("trimPartialRune of whole runes = %q", got)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"/ws/a-b_c": "/ws/a-b_c", "/my ws": "'/my ws'", "it's": `'it'\''s'`} {
		if got := human.ShellWord(in); got != want {
			t.Errorf("human.ShellWord(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMarkerShape: the schema written out for a marker names every field
// ctl.Marker has, so the tools' schemas document them all.
func TestMarkerShape(t *testing.T) {
	b, err := json.Marshal(ctl.Marker{Turn: 1, ID: "i", Anchor: "a", Note: "n", Replaces: []ctl.Marker{{Turn: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	json.Unmarshal(b, &fields)
	props := markerSchema().Properties
	for f := range fields {
		if props[f] == nil {
			t.Errorf("ctl.Marker has %q, markerShape does not: add it", f)
		}
	}
	for f := range props {
		if _, ok := fields[f]; !ok {
			t.Errorf("markerShape has %q, ctl.Marker does not", f)
		}
	}
}
