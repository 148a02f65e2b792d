package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/agents/geminiapi"
	"github.com/cowfs/cowfs/test/testenv"
)

// The real Gemini CLI (@google/gemini-cli, pinned by
// test/agents/gemini-cli/package-lock.json) under cowfs integrate
// gemini, against a scripted mock of the Gemini API on 127.0.0.1.

// geminiScript is what the model does for each prompt: shell commands
// (npm init, mkdir, sed -i, rm, mv, ln -s), write_file and replace.
var geminiScript = geminiapi.Script{
	"PROMPT-1": {
		{geminiapi.Shell("npm init -y >/dev/null && mkdir -p src lib")},
		{geminiapi.Write("src/index.js", "console.log('hello');\n"), geminiapi.Write("README.md", "# demo\n")},
		{geminiapi.Shell(`sed -i 's/"version": "1.0.0"/"version": "0.1.0"/' package.json`)},
	},
	"PROMPT-2": {
		{geminiapi.Shell("mv src/index.js lib/main.js && ln -s lib/main.js main.js")},
		{geminiapi.Replace("README.md", "# demo", "# demo app")},
		{geminiapi.Shell("rm -rf src && mkdir docs && echo notes > docs/notes.txt")},
	},
	"PROMPT-3": {
		{geminiapi.Replace("lib/main.js", "hello", "goodbye")},
		{geminiapi.Shell("rm README.md && sed -i 's/notes/more notes/' docs/notes.txt")},
	},
	"PROMPT-4": {
		{geminiapi.Write("lib/after.txt", "after the rollback\n")},
	},
	"PROMPT-0": {
		{geminiapi.Write("never.txt", "a denied prompt runs no tool\n")},
	},
}

func TestGeminiCLI(t *testing.T) {
	gemini := installGeminiCLI(t)
	api, err := geminiapi.Start(geminiScript)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	w := newWorkspace(t)
	g := &geminiRun{t: t, w: w, bin: gemini, api: api, home: geminiHome(t)}

	// Integrating needs no daemon; a prompt then is denied, saying how
	// to mount, and reaches no model.
	if out, errOut, code := w.run("integrate", "gemini"); code != 0 || !strings.Contains(errOut, "cowfs mount -d "+w.dir) {
		t.Errorf("integrate with no daemon: exit %d: %q %q; want the mount command", code, out, errOut)
	}
	settings := geminiFile(t, filepath.Join(w.dir, ".gemini", "settings.json"))
	if out := w.cowfs("integrate", "gemini"); !strings.Contains(out, "already") || geminiFile(t, filepath.Join(w.dir, ".gemini", "settings.json")) != settings {
		t.Errorf("integrating again changed the settings (%q)", out)
	}
	denied := g.prompt("PROMPT-0 do something", false)
	if !strings.Contains(denied, "cowfs mount -d "+w.dir) {
		t.Errorf("a prompt with no daemon: the CLI said %q; want it denied with cowfs mount -d %s", denied, w.dir)
	}
	if g.sawPrompt("PROMPT-0") {
		t.Errorf("a denied prompt reached the model")
	}
	if _, err := os.Stat(filepath.Join(w.dir, "never.txt")); err == nil {
		t.Errorf("a denied prompt's tool ran")
	}

	w.mount()
	m0 := snapshot(t, w.mnt)
	g.prompt("PROMPT-1 set up a node project", false)
	m1 := snapshot(t, w.mnt)
	g.prompt("PROMPT-2 rearrange it", true)
	m2 := snapshot(t, w.mnt)
	g.prompt("PROMPT-3 edit it", true)
	m3 := snapshot(t, w.mnt)
	if d := diff(m0, m1); len(d) == 0 {
		t.Fatalf("PROMPT-1 changed nothing: the CLI said %s", g.lastOut)
	}

	// Turns: one per prompt, ids and anchors from the session, the CLI's
	// process as the agent.
	var list ctl.TurnList
	w.cowfsJSON(&list, "log")
	if len(list.Turns) != 3 {
		t.Fatalf("turns: %+v; want 3", list.Turns)
	}
	sid := g.sessionID()
	for i, tr := range list.Turns {
		wantID := "gemini-" + sid[:8] + "-" + strconv.Itoa(i+1)
		if tr.ID != wantID || !strings.HasPrefix(tr.Anchor, sid+"/") || tr.State != "closed" {
			t.Errorf("turn %d: id %q anchor %q state %s; want id %s, anchor %s/…, closed", tr.Num, tr.ID, tr.Anchor, tr.State, wantID, sid)
		}
		if tr.Agent == nil || len(tr.Agent.Pids) != 1 {
			t.Errorf("turn %d: agent %+v; want the CLI's pid", tr.Num, tr.Agent)
		}
	}

	// Steps: one per tool call, named after the tool, in order; each
	// step's diff holds what that call changed.
	steps := g.steps()
	wantTools := map[uint64][]string{
		1: {"run_shell_command", "write_file", "write_file", "run_shell_command"},
		2: {"run_shell_command", "replace", "run_shell_command"},
		3: {"replace", "run_shell_command"},
	}
	for turn, tools := range wantTools {
		var got []string
		for _, s := range steps[turn] {
			got = append(got, s[:strings.IndexByte(s, '@')])
		}
		if strings.Join(got, " ") != strings.Join(tools, " ") {
			t.Errorf("turn %d: steps %v; want tools %v", turn, steps[turn], tools)
		}
	}
	wantStepFiles := map[string][]string{ // turn/step index → paths its diff names
		"1/0": {"package.json", "lib", "src"}, "1/1": {"src/index.js"}, "1/2": {"README.md"}, "1/3": {"package.json"},
		"2/0": {"lib/main.js", "main.js"}, "2/1": {"README.md"}, "2/2": {"docs", "docs/notes.txt", "src"},
		"3/0": {"lib/main.js"}, "3/1": {"README.md", "docs/notes.txt"},
	}
	for key, want := range wantStepFiles {
		turn, idx, _ := strings.Cut(key, "/")
		n, _ := strconv.ParseUint(turn, 10, 64)
		i, _ := strconv.Atoi(idx)
		if i >= len(steps[n]) {
			continue // reported above
		}
		var d ctl.Diff
		w.cowfsJSON(&d, "diff", turn, "--step", steps[n][i])
		if got := geminiDiffPaths(d); !geminiSameStrings(got, want) {
			t.Errorf("turn %s step %s: diff names %v; want %v", turn, steps[n][i], got, want)
		}
	}
	if d := w.turn("2"); !geminiHasChange(d, "main.js", "created") || !geminiHasChange(d, "lib/main.js", "renamed") || !geminiHasChange(d, "src", "deleted") {
		t.Errorf("turn 2's changes: %+v; want main.js created, lib/main.js renamed, src deleted", d.Changes)
	}

	// Rollback, undo and unrevert against the manifests.
	w.cowfs("rollback", "3")
	sameTree(t, w.mnt, m2, "rollback 3")
	g.wantMarkers(list.Turns[2])
	w.cowfs("unrevert")
	sameTree(t, w.mnt, m3, "unrevert of rollback 3")
	g.wantMarkers()
	w.cowfs("undo")
	sameTree(t, w.mnt, m2, "undo")
	w.cowfs("undo")
	sameTree(t, w.mnt, m1, "undo twice")
	g.wantMarkers(list.Turns[1])
	w.cowfs("unrevert")
	sameTree(t, w.mnt, m2, "one unrevert of two undos")
	g.wantMarkers(list.Turns[2])
	w.cowfs("unrevert")
	sameTree(t, w.mnt, m3, "two unreverts of two undos")
	g.wantMarkers()

	// --rewind: the files and the conversation go back to before turn
	// 2; the resumed session then lacks prompts 2 and 3, and the next
	// prompt carries the marker's note to the model.
	var rw struct {
		Rollback ctl.RollbackResult `json:"rollback"`
		Resume   struct {
			Session, Transcript, Command string
			Truncated                    bool
		} `json:"resume"`
	}
	cmd := exec.Command(cowfsBin, "-w", w.mnt, "integrate", "gemini", "--rewind", "2", "--json")
	cmd.Env = append(w.env(), "HOME="+g.home) // where the CLI keeps the session
	if out, err := cmd.Output(); err != nil || json.Unmarshal(out, &rw) != nil {
		t.Fatalf("integrate gemini --rewind 2: %v: %s", err, out)
	}
	sameTree(t, w.mnt, m1, "integrate gemini --rewind 2")
	if !rw.Resume.Truncated || rw.Resume.Session != sid || rw.Resume.Command != "gemini --resume "+sid || rw.Rollback.Marker == nil {
		t.Fatalf("--rewind 2: %+v; want the session truncated and gemini --resume %s", rw, sid)
	}
	note := rw.Rollback.Marker.Note
	g.prompt("PROMPT-4 go on", true)
	req := g.lastRequest("PROMPT-4")
	if strings.Contains(req, "PROMPT-2") || strings.Contains(req, "PROMPT-3") || !strings.Contains(req, "PROMPT-1") {
		t.Errorf("after --rewind 2 the model saw prompts 2 or 3, or not prompt 1: %.2000s", req)
	}
	if !strings.Contains(req, note) {
		t.Errorf("the prompt after the rollback did not carry the marker's note %q to the model", note)
	}
	w.cowfsJSON(&list, "log")
	if len(list.Turns) != 2 || list.Turns[0].Num != 1 || list.Turns[1].ID != "gemini-"+sid[:8]+"-4" {
		t.Errorf("turns after the rollback and a new prompt: %+v; want 1 and gemini-%s-4", list.Turns, sid[:8])
	}
	// The tree is as before turn 2 but for the file PROMPT-4 wrote (and
	// its directory's mtime).
	after := snapshot(t, w.mnt)
	if _, ok := after["lib/after.txt"]; !ok {
		t.Errorf("PROMPT-4 after the rollback wrote no lib/after.txt")
	}
	delete(after, "lib/after.txt")
	delete(after, "lib")
	delete(m1, "lib")
	if d := diff(m1, after); len(d) > 0 {
		t.Errorf("PROMPT-4 after the rollback: the tree differs from before turn 2 by %v; want lib/after.txt only", d)
	}

	// Integrating is refused while a turn is open, naming turn end;
	// --remove takes the hooks out.
	w.cowfs("turn", "begin", "--id", "by-hand")
	if _, errOut, code := w.run("integrate", "gemini"); code != 4 || !strings.Contains(errOut, "turn end") {
		t.Errorf("integrate with a turn open: exit %d: %q; want 4 naming cowfs turn end", code, errOut)
	}
	w.cowfs("turn", "end")
	w.cowfs("integrate", "gemini", "--remove")
	// The file held cowfs's hooks alone: it goes, with its directory.
	if _, err := os.Lstat(w.path(".gemini")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after --remove .gemini is still there (%v)", err)
	}
	if out := w.cowfs("integrate", "gemini", "--remove"); !strings.Contains(out, "no cowfs hooks") {
		t.Errorf("--remove again: %q", out)
	}
}

// geminiRun runs prompts through the Gemini CLI in a workspace.
type geminiRun struct {
	t       *testing.T
	w       *workspace
	bin     string // the CLI's gemini.js
	api     *geminiapi.Server
	home    string
	lastOut string
}

// prompt runs one prompt non-interactively (resuming the latest session
// if resume) and returns what the CLI printed.
func (g *geminiRun) prompt(text string, resume bool) string {
	g.t.Helper()
	args := []string{g.bin, "-p", text, "-m", "gemini-2.5-flash", "--approval-mode", "yolo"}
	if resume {
		args = append(args, "--resume", "latest")
	}
	// A bound, not an assertion: a CLI that hangs fails the test.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := g.command(ctx, args)
	out, err := cmd.CombinedOutput()
	g.lastOut = string(out)
	if err != nil {
		g.t.Fatalf("gemini -p %q: %v:\n%s", text, err, out)
	}
	return g.lastOut
}

// command is the CLI run with args in the workspace, with the API mock
// as its model and a HOME of its own.
func (g *geminiRun) command(ctx context.Context, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = g.w.mnt
	cmd.Env = append(g.w.env(), "HOME="+g.home, "GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL="+g.api.URL,
		"NO_COLOR=1", "NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_FUND=false",
		"NPM_CONFIG_AUDIT=false", "NPM_CONFIG_CACHE="+filepath.Join(g.home, ".npm"))
	return cmd
}

// sawPrompt reports whether any request to the model held text.
func (g *geminiRun) sawPrompt(text string) bool {
	return g.lastRequest(text) != ""
}

// lastRequest is the body of the last streamed request whose latest
// user prompt held text ("" if none did).
func (g *geminiRun) lastRequest(text string) string {
	reqs := g.api.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method == "streamGenerateContent" && bytes.Contains(reqs[i].Body, []byte(text)) {
			return string(reqs[i].Body)
		}
	}
	return ""
}

// sessionID is the session the prompts ran in: the one session file.
func (g *geminiRun) sessionID() string {
	g.t.Helper()
	// A session resumed in a later minute is written to a new file of
	// that minute's name: every file must be the one session's.
	files, _ := filepath.Glob(filepath.Join(g.home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	if len(files) == 0 {
		g.t.Fatalf("no session file")
	}
	sid := ""
	for _, f := range files {
		line, _, _ := strings.Cut(geminiFile(g.t, f), "\n")
		var meta struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal([]byte(line), &meta); err != nil || len(meta.SessionID) < 8 {
			g.t.Fatalf("session file %s starts %q", f, line)
		}
		if sid != "" && meta.SessionID != sid {
			g.t.Fatalf("session files of two sessions: %v", files)
		}
		sid = meta.SessionID
	}
	return sid
}

// steps lists each turn's steps, in order, from the event stream.
func (g *geminiRun) steps() map[uint64][]string {
	g.t.Helper()
	out := g.w.cowfs("events", "--json")
	steps := map[uint64][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev ctl.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			g.t.Fatalf("event %q: %v", line, err)
		}
		if ev.Type == ctl.EventStep {
			steps[ev.Turn] = append(steps[ev.Turn], ev.Step)
		}
	}
	return steps
}

// wantMarkers checks the markers standing are those of turns, with
// their anchors.
func (g *geminiRun) wantMarkers(turns ...ctl.Turn) {
	g.t.Helper()
	var ms ctl.MarkerList
	g.w.cowfsJSON(&ms, "markers")
	var got, want []string
	for _, m := range ms.Markers {
		got = append(got, strconv.FormatUint(m.Turn, 10)+" "+m.Anchor)
	}
	for _, tr := range turns {
		want = append(want, strconv.FormatUint(tr.Num, 10)+" "+tr.Anchor)
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		g.t.Errorf("markers: %v; want %v", got, want)
	}
}

// geminiHome is a HOME for the CLI: an API key from the environment as
// its way in, and nothing that would reach beyond 127.0.0.1 (no update
// check, no usage statistics, no telemetry). Folder trust is off so the
// workspace's hooks and yolo mode apply.
func geminiHome(t *testing.T) string {
	home := t.TempDir()
	settings := `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}
`
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// installGeminiCLI installs the pinned CLI with npm ci into a cache
// directory kept across runs (keyed by the lockfile), and returns the
// path of its gemini.js. It skips where npm or Node 20 is missing.
func installGeminiCLI(t *testing.T) string {
	t.Helper()
	testenv.NeedTool(t, "npm")
	node := testenv.NeedTool(t, "node")
	v, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output()
	if major, _ := strconv.Atoi(strings.TrimSpace(string(v))); err != nil || major < 20 {
		testenv.Skip(t, "the Gemini CLI needs Node 20 or later")
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "agents", "gemini-cli")
	lock := geminiFile(t, filepath.Join(src, "package-lock.json"))
	sum := sha256.Sum256([]byte(lock))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cowfs-test", "gemini-cli-"+hex.EncodeToString(sum[:6]))
	bin := filepath.Join(dir, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	stamp := filepath.Join(dir, "installed")
	if _, err := os.Stat(stamp); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(geminiFile(t, filepath.Join(src, f))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// No install scripts: the CLI runs without node-pty's native build.
	cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NPM_CONFIG_UPDATE_NOTIFIER=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return bin
}

// geminiFile reads a file the test needs.
func geminiFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// geminiDiffPaths lists the paths a diff names, sorted.
func geminiDiffPaths(d ctl.Diff) []string {
	var out []string
	for _, f := range d.Files {
		out = append(out, string(f.Path))
	}
	sort.Strings(out)
	return out
}

func geminiSameStrings(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

func geminiHasChange(d ctl.TurnDetail, path, kind string) bool {
	for _, c := range d.Changes {
		if string(c.Path) == path && c.Kind == kind {
			return true
		}
	}
	return false
}

// TestGeminiCLIInterrupted: a Gemini CLI killed in the middle of a
// prompt runs no hook that ends its turn; the next prompt ends it and
// begins its own.
func TestGeminiCLIInterrupted(t *testing.T) {
	gemini := installGeminiCLI(t)
	api, err := geminiapi.Start(geminiapi.Script{
		// The tool's shell is the agent loop's child: it kills the CLI
		// as a power cut or kill -9 would, before any hook that ends a
		// turn can run.
		"PROMPT-KILLED": {{geminiapi.Shell("echo half > half.txt && kill -KILL $PPID")}},
		"PROMPT-NEXT":   {{geminiapi.Write("after.txt", "after the interruption\n")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	w := newWorkspace(t)
	g := &geminiRun{t: t, w: w, bin: gemini, api: api, home: geminiHome(t)}
	w.mount()
	w.cowfs("integrate", "gemini")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := g.command(ctx, []string{gemini, "-p", "PROMPT-KILLED", "-m", "gemini-2.5-flash", "--approval-mode", "yolo"}).CombinedOutput()
	if err == nil {
		t.Fatalf("the CLI whose agent loop was killed exited 0:\n%s", out)
	}
	st := w.status()
	if st.OpenTurn == nil {
		t.Fatalf("the killed CLI's turn is not open: %+v\n%s", st, out)
	}
	g.prompt("PROMPT-NEXT go on", false)
	var list ctl.TurnList
	w.cowfsJSON(&list, "log")
	if len(list.Turns) != 2 || list.Turns[0].State != "closed" || list.Turns[1].State != "closed" || list.Turns[0].ID == list.Turns[1].ID {
		t.Fatalf("turns: %+v; want the interrupted one ended and the next begun, both closed", list.Turns)
	}
	if d := w.turn("1"); !geminiHasChange(d, "half.txt", "created") || len(d.Changes) != 1 {
		t.Errorf("the interrupted turn's changes: %+v; want half.txt", d.Changes)
	}
	if d := w.turn("2"); !geminiHasChange(d, "after.txt", "created") || len(d.Changes) != 1 {
		t.Errorf("the next turn's changes: %+v; want after.txt", d.Changes)
	}
	w.cowfs("rollback", "1")
	for _, f := range []string{"half.txt", "after.txt"} {
		if _, err := os.Lstat(w.path(f)); err == nil {
			t.Errorf("%s is still there after rolling back to before the interrupted turn", f)
		}
	}
}
