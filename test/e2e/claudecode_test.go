package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/agents/anthropicapi"
)

// The scripted model's side of the test's prompts: each prompt's text
// holds its TASK-… word, and each tool call's id names what it does.
func claudeScripts(ws string) []anthropicapi.Script {
	bash := func(id, command string) anthropicapi.ToolUse {
		return anthropicapi.ToolUse{ID: id, Name: "Bash", Input: map[string]any{"command": command, "description": id}}
	}
	file := func(rel string) string { return filepath.Join(ws, rel) }
	return []anthropicapi.Script{
		{Match: "TASK-ONE", Replies: []anthropicapi.Reply{
			{Text: "Setting up.", Tools: []anthropicapi.ToolUse{bash("toolu_01npminit", "npm init -y >/dev/null")}},
			{Tools: []anthropicapi.ToolUse{bash("toolu_01mkdir", "mkdir -p src lib")}},
			{Tools: []anthropicapi.ToolUse{{ID: "toolu_01write", Name: "Write", Input: map[string]any{"file_path": file("src/index.js"), "content": "console.log('hello');\n"}}}},
			{Tools: []anthropicapi.ToolUse{{ID: "toolu_01util", Name: "Write", Input: map[string]any{"file_path": file("lib/util.js"), "content": "module.exports = 1;\n"}}}},
			{Text: "Set up."},
		}},
		{Match: "TASK-TWO", Replies: []anthropicapi.Reply{
			{Tools: []anthropicapi.ToolUse{{ID: "toolu_02read", Name: "Read", Input: map[string]any{"file_path": file("src/index.js")}}}},
			{Tools: []anthropicapi.ToolUse{{ID: "toolu_02edit", Name: "Edit", Input: map[string]any{"file_path": file("src/index.js"), "old_string": "hello", "new_string": "hello, world"}}}},
			{Tools: []anthropicapi.ToolUse{bash("toolu_02sed", `sed -i 's/"version": "1.0.0"/"version": "1.1.0"/' package.json`)}},
			{Tools: []anthropicapi.ToolUse{bash("toolu_02ln", "ln -s src/index.js main.js")}},
			{Text: "Edited."},
		}},
		{Match: "TASK-THREE", Replies: []anthropicapi.Reply{
			{Tools: []anthropicapi.ToolUse{bash("toolu_03mv", "mv lib/util.js src/util.js && rmdir lib")}},
			{Tools: []anthropicapi.ToolUse{bash("toolu_03rm", "rm notes.txt")}},
			{Tools: []anthropicapi.ToolUse{{ID: "toolu_03doc", Name: "Write", Input: map[string]any{"file_path": file("docs/readme.md"), "content": "# ws\n"}}}},
			{Text: "Reorganised."},
		}},
		{Match: "TASK-FOUR", Replies: []anthropicapi.Reply{
			{Tools: []anthropicapi.ToolUse{bash("toolu_04echo", "echo four > four.txt")}},
			{Text: "Four."},
		}},
		{Match: "TASK-FIVE", Replies: []anthropicapi.Reply{{Text: "Five."}}},
		{Match: "TASK-WAIT", Replies: []anthropicapi.Reply{
			{Tools: []anthropicapi.ToolUse{bash("toolu_06wait", "echo started > started.txt; tail -f /dev/null")}},
			{Text: "Waited."},
		}},
		{Match: "TASK-KILL", Replies: []anthropicapi.Reply{
			{Tools: []anthropicapi.ToolUse{bash("toolu_07wait", "echo $$ > killed.txt; tail -f /dev/null")}},
			{Text: "Never seen."},
		}},
		{Match: "TASK-AFTER", Replies: []anthropicapi.Reply{{Text: "After."}}},
		{Match: "TASK-BLOCKED", Replies: []anthropicapi.Reply{
			{Tools: []anthropicapi.ToolUse{bash("toolu_08blocked", "echo blocked > blocked.txt")}},
			{Text: "Should not run."},
		}},
	}
}

// #33: the real Claude Code CLI under cowfs, with nothing but `cowfs
// integrate claude-code`: its prompts are turns, its tool calls steps,
// rollback, undo and unrevert put the files where the turns found them,
// a rewind prints the command that truncates the conversation to match,
// and the model hears once that files went back.
func TestClaudeCode(t *testing.T) {
	bin := claudeCLI(t)
	w := newWorkspace(t)
	w.seed(map[string]string{
		"notes.txt":             "keep me\n",
		".claude/settings.json": `{"permissions": {"allow": ["Bash(echo:*)"]}}`,
	})
	w.mount()
	api, err := anthropicapi.Start(claudeScripts(w.mnt))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s := api.Stray(); len(s) > 0 {
			t.Logf("requests the mock refused (not the Messages API): %v", s)
		}
		api.Close()
	})
	env := claudeEnv(w, t.TempDir(), api)

	// Integrate: the hooks join the person's settings, once.
	var integ struct {
		Settings string   `json:"settings"`
		Events   []string `json:"events"`
		Changed  bool     `json:"changed"`
		Daemon   bool     `json:"daemon"`
	}
	w.cowfsJSON(&integ, "integrate", "claude-code")
	if !integ.Changed || !integ.Daemon || len(integ.Events) != 4 || integ.Settings != w.path(".claude/settings.json") {
		t.Fatalf("integrate: %+v", integ)
	}
	w.cowfsJSON(&integ, "integrate", "claude-code")
	if integ.Changed || len(integ.Events) != 4 {
		t.Fatalf("integrate again changed the settings: %+v", integ)
	}
	settings, _ := os.ReadFile(w.path(".claude/settings.json"))
	if !strings.Contains(string(settings), `"Bash(echo:*)"`) || !strings.Contains(string(settings), cowfsBin+" -w "+w.mnt+" hook claude-code PreToolUse") {
		t.Fatalf("settings:\n%s", settings)
	}
	trees := []tree{snapshot(t, w.mnt)}

	// Three prompts, one session.
	first := claude(t, w, bin, env, "TASK-ONE: set the package up")
	sid := first.SessionID
	transcripts, _ := filepath.Glob(filepath.Join(env2home(env), ".claude", "projects", "*", sid+".jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("transcript of session %s: %v", sid, transcripts)
	}
	beforeTwo := lastEntry(t, transcripts[0])
	trees = append(trees, snapshot(t, w.mnt))
	claude(t, w, bin, env, "TASK-TWO: edit it", "--resume", sid)
	trees = append(trees, snapshot(t, w.mnt))
	claude(t, w, bin, env, "TASK-THREE: reorganise", "--resume", sid)
	trees = append(trees, snapshot(t, w.mnt))

	// Turns: one a prompt, named after it, anchored in the session.
	var tl ctl.TurnList
	w.cowfsJSON(&tl, "log")
	if len(tl.Turns) != 3 {
		t.Fatalf("turns: %+v", tl.Turns)
	}
	for i, tn := range tl.Turns {
		session, prompt, _ := strings.Cut(tn.Anchor, "/")
		if tn.State != ctl.StateClosed || !strings.HasPrefix(tn.ID, "cc-") || len(tn.ID) != 11 || session != sid ||
			!strings.HasPrefix(prompt, tn.ID[3:]) {
			t.Errorf("turn %d: %+v", i+1, tn)
		}
		if tn.Agent == nil || len(tn.Agent.Pids) != 1 {
			t.Errorf("turn %d: agent %+v, want Claude Code's pid", i+1, tn.Agent)
		}
	}

	// Steps: each tool call's changes, under its tool_use_id.
	for _, c := range []struct {
		turn, step string
		want       map[string]string
	}{
		{"1", "toolu_01npminit", map[string]string{"package.json": "created"}},
		{"1", "toolu_01mkdir", map[string]string{"src": "created", "lib": "created"}},
		{"1", "toolu_01write", map[string]string{"src/index.js": "created"}},
		{"2", "toolu_02read", map[string]string{}},
		{"2", "toolu_02edit", map[string]string{"src/index.js": "modified"}},
		{"2", "toolu_02sed", map[string]string{"package.json": "modified"}},
		{"2", "toolu_02ln", map[string]string{"main.js": "created"}},
		{"3", "toolu_03mv", map[string]string{"src/util.js": "renamed", "lib": "deleted"}},
		{"3", "toolu_03rm", map[string]string{"notes.txt": "deleted"}},
		{"3", "toolu_03doc", map[string]string{"docs": "created", "docs/readme.md": "created"}},
	} {
		if got := w.showStep(c.turn, c.step); !reflect.DeepEqual(got, c.want) {
			t.Errorf("turn %s step %s: %v, want %v", c.turn, c.step, got, c.want)
		}
	}
	// Each step is named after its tool (show --steps).
	var steps ctl.StepList
	w.cowfsJSON(&steps, "show", "2", "--steps")
	var named []string
	for _, s := range steps.Steps {
		named = append(named, s.ID+"="+s.Name)
	}
	if got := strings.Join(named, " "); got != "toolu_02read=Read toolu_02edit=Edit toolu_02sed=Bash toolu_02ln=Bash" {
		t.Errorf("turn 2's steps: %s", got)
	}
	if d := w.diffStep("2", "toolu_02edit")["src/index.js"]; !strings.Contains(d.Diff, "+console.log('hello, world');") {
		t.Errorf("the Edit step's diff: %+v", d)
	}
	if d := w.diffStep("2", "toolu_02sed")["package.json"]; !strings.Contains(d.Diff, `+  "version": "1.1.0"`) {
		t.Errorf("the sed step's diff: %+v", d)
	}

	// Rollback, unrevert, undo: the trees the turns found.
	w.rollback("3")
	sameTree(t, w.mnt, trees[2], "rolled back to before turn 3")
	w.cowfs("unrevert")
	sameTree(t, w.mnt, trees[3], "unreverted")
	w.cowfs("undo")
	sameTree(t, w.mnt, trees[2], "undone")
	if standing, _ := w.markerTurns(); !reflect.DeepEqual(standing, []uint64{3}) {
		t.Fatalf("markers after undo: %v", standing)
	}

	// Rewind to before turn 2: the files go back, and the command
	// printed resumes the session with what came before its prompt.
	var rw struct {
		Rollback ctl.RollbackResult `json:"rollback"`
		Resume   struct {
			Session string `json:"session_id"`
			At      string `json:"resume_session_at"`
			Command string `json:"command"`
			Dir     string `json:"dir"`
		} `json:"resume"`
	}
	// cowfs finds the transcript where Claude Code keeps it, in HOME.
	rewind := func(args ...string) []byte {
		cmd := exec.Command(cowfsBin, append([]string{"-w", w.mnt, "integrate", "claude-code", "--rewind", "2"}, args...)...)
		cmd.Env = append(w.env(), "HOME="+env2home(env))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cowfs integrate claude-code --rewind 2 %v: %v: %s", args, err, out)
		}
		return out
	}
	preview := string(rewind("--dry-run"))
	sameTree(t, w.mnt, trees[2], "after the rewind's preview")
	if !strings.Contains(preview, "Would roll back to before turn 2") || !strings.Contains(preview, "claude --resume "+sid+" --resume-session-at "+beforeTwo) {
		t.Fatalf("the rewind's preview:\n%s", preview)
	}
	if err := json.Unmarshal(rewind("--json"), &rw); err != nil {
		t.Fatal(err)
	}
	sameTree(t, w.mnt, trees[1], "rewound to before turn 2")
	if rw.Rollback.Marker == nil || rw.Rollback.Marker.Turn != 2 || rw.Resume.Session != sid || rw.Resume.At != beforeTwo ||
		rw.Resume.Command != "claude --resume "+sid+" --resume-session-at "+beforeTwo || rw.Resume.Dir != w.mnt {
		t.Fatalf("rewind: %+v (the entry before TASK-TWO is %s)", rw, beforeTwo)
	}
	w.wantHistory("rewound", map[uint64]string{1: ctl.StateClosed, 2: ctl.StateReverted, 3: ctl.StateReverted}, 2)

	// Run it: the model sees the conversation up to turn 1, and the
	// marker's note, once.
	args := strings.Fields(rw.Resume.Command)[1:]
	claude(t, w, bin, env, "TASK-FOUR: go on", args...)
	four := apiMessages(api, "TASK-FOUR")
	if len(four) == 0 {
		t.Fatal("the mock saw no request for TASK-FOUR")
	}
	note := rw.Rollback.Marker.Note
	for _, m := range four {
		if !strings.Contains(m, "TASK-ONE") || strings.Contains(m, "TASK-TWO") || strings.Contains(m, "TASK-THREE") {
			t.Fatalf("the resumed conversation is not cut before turn 2: %s", m)
		}
	}
	if !strings.Contains(four[0], note) {
		t.Fatalf("the marker's note %q did not reach the model: %s", note, four[0])
	}
	claude(t, w, bin, env, "TASK-FIVE: and on", "--resume", sid)
	five := apiMessages(api, "TASK-FIVE")
	n, was := strings.Count(five[0], note), strings.Count(four[len(four)-1], note)
	t.Logf("the note: %d times in TASK-FOUR's last request, %d in TASK-FIVE's first", was, n)
	if n != was {
		t.Errorf("the note came again: %d times in TASK-FIVE's request, %d in TASK-FOUR's", n, was)
	}
	tree4 := snapshot(t, w.mnt)
	if b, _ := os.ReadFile(w.path("four.txt")); string(b) != "four\n" {
		t.Fatalf("four.txt: %q", b)
	}
	w.wantHistory("after two more prompts", map[uint64]string{1: ctl.StateClosed, 4: ctl.StateClosed, 5: ctl.StateClosed}, 2)

	// Interrupted: SIGINT skips Stop, and SessionEnd ends the turn.
	run := startClaude(t, w, bin, env, "TASK-WAIT: wait", "--resume", sid)
	waitFor(t, w.path("started.txt"), run)
	if st := w.status(); st.OpenTurn == nil || st.OpenTurn.Num != 6 {
		t.Fatalf("no turn open while the tool runs: %+v", st.OpenTurn)
	}
	syscall.Kill(run.cmd.Process.Pid, syscall.SIGINT)
	run.wait(t)
	if st := w.status(); st.OpenTurn != nil {
		t.Fatalf("turn %d still open after SIGINT", st.OpenTurn.Num)
	}
	w.cowfs("undo")
	sameTree(t, w.mnt, tree4, "the interrupted turn undone")

	// Killed: no hook runs at all, and the next prompt ends the turn
	// left open before it begins its own.
	run = startClaude(t, w, bin, env, "TASK-KILL: wait")
	waitFor(t, w.path("killed.txt"), run)
	syscall.Kill(-run.cmd.Process.Pid, syscall.SIGKILL)
	run.wait(t)
	// Claude Code runs a tool's command in a session of its own, which
	// outlives it; the command said which.
	b, _ := os.ReadFile(w.path("killed.txt"))
	if tool, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && tool > 1 {
		syscall.Kill(-tool, syscall.SIGKILL)
		syscall.Kill(tool, syscall.SIGKILL)
	} else {
		t.Fatalf("killed.txt: %q", b)
	}
	if st := w.status(); st.OpenTurn == nil || st.OpenTurn.Num != 7 {
		t.Fatalf("the killed session's turn is not open: %+v", st.OpenTurn)
	}
	claude(t, w, bin, env, "TASK-AFTER: go on")
	if st := w.status(); st.OpenTurn != nil {
		t.Fatalf("turn %d open after the next prompt's answer", st.OpenTurn.Num)
	}
	w.wantHistory("after the killed session", map[uint64]string{1: ctl.StateClosed, 4: ctl.StateClosed, 5: ctl.StateClosed,
		7: ctl.StateClosed, 8: ctl.StateClosed}, 2, 6)

	// Integrate refuses inside a turn, naming how to end it.
	w.cowfs("turn", "begin", "--id", "by-hand")
	if _, stderr, code := w.run("integrate", "claude-code", "--remove"); code != 4 || !strings.Contains(stderr, "cowfs -w "+w.mnt+" turn end") {
		t.Fatalf("integrate in a turn: exit %d: %s", code, stderr)
	}
	// A prompt meanwhile is blocked, and the end of its session leaves
	// the person's turn open.
	res := claude(t, w, bin, env, "TASK-BLOCKED: not now")
	if !strings.Contains(res.Result, "blocked") || !strings.Contains(res.Result, "cowfs turn end") {
		t.Fatalf("the prompt in a turn not Claude Code's: %+v", res)
	}
	if st := w.status(); st.OpenTurn == nil || st.OpenTurn.ID != "by-hand" {
		t.Fatalf("the person's turn was ended: %+v", st.OpenTurn)
	}
	w.cowfs("turn", "end")

	// No daemon: the prompt is blocked, saying how to mount, and the
	// model never sees it.
	w.cowfs("umount")
	blocked := startClaude(t, w, bin, env, "TASK-BLOCKED: do not run", "--resume", sid)
	blocked.wait(t)
	if msgs := apiMessages(api, "TASK-BLOCKED"); len(msgs) != 0 {
		t.Fatalf("a prompt with no daemon reached the model: %s", msgs[0])
	}
	if out := blocked.stdout.String() + blocked.stderr.String(); !strings.Contains(out, "mount -d "+w.dir) {
		t.Fatalf("the blocked prompt does not say how to mount:\nstdout: %s\nstderr: %s", blocked.stdout.String(), blocked.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(w.dir, "blocked.txt")); err == nil {
		t.Fatal("the blocked prompt's tool ran")
	}

	// --remove leaves the person's settings as they were.
	w.mount()
	var removed struct {
		Removed int  `json:"removed"`
		Changed bool `json:"changed"`
	}
	w.cowfsJSON(&removed, "integrate", "claude-code", "--remove")
	settings, _ = os.ReadFile(w.path(".claude/settings.json"))
	var s map[string]any
	if err := json.Unmarshal(settings, &s); err != nil || removed.Removed != 4 || !reflect.DeepEqual(s, map[string]any{"permissions": map[string]any{"allow": []any{"Bash(echo:*)"}}}) {
		t.Fatalf("after --remove (%+v, %v):\n%s", removed, err, settings)
	}
}

// waitFor waits until path exists, which a tool call of run creates.
func waitFor(t *testing.T, path string, run *claudeRun) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool call that creates %s never ran\nstderr: %s", path, run.stderr.String())
		}
	}
}

// env2home returns HOME from an environment.
func env2home(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			return v
		}
	}
	return ""
}
