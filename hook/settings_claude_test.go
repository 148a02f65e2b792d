package hook

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// userSettings is a settings file a person wrote, with hooks of their
// own on an event cowfs hooks too, and key order that is not sorted.
const userSettings = `{
  "permissions": {"allow": ["Bash(npm run test:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}
    ],
    "PostToolUse": [
      {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
    ]
  },
  "model": "opus"
}`

func commands() map[string]string {
	m := map[string]string{}
	for _, ev := range ClaudeEvents {
		m[ev] = Claude.Command("/usr/local/bin/cowfs", "/w s", ev)
	}
	return m
}

func TestAddClaudeHooksKeepsTheUsersSettings(t *testing.T) {
	b, err := Claude.Add([]byte(userSettings), commands())
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"Bash(npm run test:*)"`, `"./check.sh"`, `"prettier --write"`, `"model": "opus"`,
		`"/usr/local/bin/cowfs -w '/w s' hook claude-code UserPromptSubmit"`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in\n%s", want, s)
		}
	}
	if strings.Index(s, `"permissions"`) > strings.Index(s, `"hooks"`) || strings.Index(s, `"hooks"`) > strings.Index(s, `"model"`) {
		t.Errorf("keys reordered:\n%s", s)
	}
	evs, _ := Claude.In(b)
	if !reflect.DeepEqual(evs, []string{"PreToolUse", "UserPromptSubmit", "Stop", "SessionEnd"}) {
		t.Errorf("our hooks on %v", evs)
	}
	// Again: the same bytes, no hook doubled.
	again, err := Claude.Add(b, commands())
	if err != nil || string(again) != s {
		t.Fatalf("not idempotent (%v):\n%s\n---\n%s", err, s, again)
	}
	// A moved binary replaces the old commands.
	moved := commands()
	moved[ClaudeStop] = Claude.Command("/opt/cowfs", "/w s", ClaudeStop)
	b2, _ := Claude.Add(b, moved)
	if strings.Count(string(b2), "hook claude-code Stop") != 1 || !strings.Contains(string(b2), "/opt/cowfs") {
		t.Fatalf("moved:\n%s", b2)
	}
}

func TestRemoveClaudeHooksTakesOnlyOurs(t *testing.T) {
	b, _ := Claude.Add([]byte(userSettings), commands())
	out, n, err := Claude.Remove(b)
	if err != nil || n != 4 {
		t.Fatalf("removed %d: %v", n, err)
	}
	s := string(out)
	if strings.Contains(s, "claude-code") || strings.Contains(s, "UserPromptSubmit") || strings.Contains(s, "SessionEnd") {
		t.Errorf("left ours or empty keys:\n%s", s)
	}
	for _, want := range []string{`"./check.sh"`, `"prettier --write"`, `"PreToolUse"`, `"model": "opus"`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in\n%s", want, s)
		}
	}
	// Nothing of ours: nothing changes.
	if again, n, _ := Claude.Remove(out); n != 0 || string(again) != s {
		t.Errorf("removed %d from a file without ours", n)
	}
}

func TestClaudeHooksAloneLeaveNothingWhenRemoved(t *testing.T) {
	b, err := Claude.Add(nil, commands())
	if err != nil {
		t.Fatal(err)
	}
	out, n, err := Claude.Remove(b)
	if err != nil || n != 4 || strings.TrimSpace(string(out)) != "{}" {
		t.Fatalf("removed %d, %v: %s", n, err, out)
	}
	// Written, that is no file and no .claude directory.
	dir := t.TempDir()
	p := Claude.Path(dir)
	if err := Claude.Write(dir, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := Claude.Read(dir); string(got) != string(b) {
		t.Fatalf("read back %s", got)
	}
	if err := Claude.Write(dir, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(p)); !os.IsNotExist(err) {
		t.Fatalf(".claude left: %v", err)
	}
}

func TestBadSettingsAreRefused(t *testing.T) {
	for _, s := range []string{`[1]`, `{"hooks": 3}`, `{"hooks": {"Stop": 5}`} {
		if _, err := Claude.Add([]byte(s), commands()); err == nil {
			t.Errorf("%s: no error", s)
		}
	}
}

func TestHookCommandQuoting(t *testing.T) {
	got := Claude.Command("/a b/cowfs", "/it's", "Stop", "--agent-scope", "mount")
	if want := `'/a b/cowfs' -w '/it'\''s' hook claude-code Stop --agent-scope mount`; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

// TestSettingsNeverFollowLinks: the workspace is the agent's, and
// integrate may run as root. A .claude directory that is a symlink
// elsewhere, or a settings file that is one, is refused; nothing
// outside the workspace is read or written.
func TestSettingsNeverFollowLinks(t *testing.T) {
	outside := t.TempDir()
	canary := filepath.Join(outside, "settings.json")
	if err := os.WriteFile(canary, []byte(`{"secret": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, ".claude")); err != nil {
		t.Fatal(err)
	}
	if b, err := Claude.Read(ws); err == nil {
		t.Errorf("read through a linked .claude: %s", b)
	}
	if err := Claude.Write(ws, []byte("{\"hooks\": {}}\n")); err == nil {
		t.Errorf("wrote through a linked .claude")
	}
	ws2 := t.TempDir()
	os.Mkdir(filepath.Join(ws2, ".claude"), 0o755)
	if err := os.Symlink(canary, filepath.Join(ws2, ".claude", "settings.json")); err != nil {
		t.Fatal(err)
	}
	if b, err := Claude.Read(ws2); err == nil {
		t.Errorf("read through a linked settings.json: %s", b)
	}
	// Writing replaces the link itself, never what it points to.
	if err := Claude.Write(ws2, []byte("{\"hooks\": {}}\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(canary); string(b) != `{"secret": 1}` {
		t.Errorf("the file outside the workspace became %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(ws2, ".claude", "settings.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("settings.json after the write: %v, %v", fi, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside the workspace: %v", entries)
	}
}
