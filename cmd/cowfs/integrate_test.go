package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runIn runs cowfs with -w ws and stdin, as main does, and returns its
// exit code and what it wrote to stdout.
func runIn(t *testing.T, ws, stdin string, args ...string) (int, string) {
	t.Helper()
	global = globalOptions{}
	root := newRootCommand()
	root.SetArgs(append([]string{"-w", ws}, args...))
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	in, inW, _ := os.Pipe()
	out, outW, _ := os.Pipe()
	saved := [2]*os.File{os.Stdin, os.Stdout}
	os.Stdin, os.Stdout = in, outW
	go func() { inW.WriteString(stdin); inW.Close() }()
	got := make(chan string)
	go func() { b, _ := io.ReadAll(out); got <- string(b) }()
	_, err := root.ExecuteC()
	os.Stdin, os.Stdout = saved[0], saved[1]
	outW.Close()
	in.Close()
	return exitCode(err), <-got
}

func TestIntegrateArguments(t *testing.T) {
	for _, args := range [][]string{
		{"integrate", "claude-code", "extra"},
		{"integrate", "claude-code", "--remove", "--rewind", "1"},
		{"integrate", "claude-code", "--dry-run"},
		{"integrate", "claude-code", "--rewind", "-1"},
		{"integrate", "claude-code", "--agent-scope", "everyone"},
		{"hook", "claude-code"},
		{"hook", "claude-code", "Stop", "--agent-scope", "everyone"},
	} {
		if code, err := run(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d", args, code, err, exitUsage)
		}
	}
}

// With no daemon, integrate writes the hooks (they block prompts until
// the workspace is mounted) and --remove takes them out; the hook
// blocks a prompt, saying how to mount, and lets every other event by.
func TestClaudeCodeWithoutDaemon(t *testing.T) {
	t.Setenv("COWFS_STATE_DIR", t.TempDir())
	ws := t.TempDir()
	code, out := runIn(t, ws, "", "integrate", "claude-code", "--json")
	var res integrated
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || !res.Changed || res.Daemon || len(res.Events) != 4 {
		t.Fatalf("integrate: exit %d, %v: %s", code, err, out)
	}
	settings, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json"))
	if !strings.Contains(string(settings), " -w "+ws+" hook claude-code UserPromptSubmit") {
		t.Fatalf("settings:\n%s", settings)
	}

	code, out = runIn(t, ws, `{"session_id":"s","prompt_id":"9d2c4af6-9986-4dba-b7c0-fc554c366f6b","hook_event_name":"UserPromptSubmit"}`, "hook", "claude-code", "UserPromptSubmit")
	var block struct{ Decision, Reason string }
	if err := json.Unmarshal([]byte(out), &block); code != 0 || err != nil || block.Decision != "block" || !strings.Contains(block.Reason, "mount -d "+ws) {
		t.Fatalf("prompt hook: exit %d, %v: %s", code, err, out)
	}
	for _, ev := range []string{"PreToolUse", "Stop", "SessionEnd"} {
		if code, out := runIn(t, ws, `{}`, "hook", "claude-code", ev); code != 0 || out != "" {
			t.Errorf("%s hook: exit %d: %s", ev, code, out)
		}
	}

	if code, _ := runIn(t, ws, "", "integrate", "claude-code", "--remove"); code != 0 {
		t.Fatalf("--remove: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(ws, ".claude")); !os.IsNotExist(err) {
		t.Fatalf(".claude left after --remove: %v", err)
	}
}
