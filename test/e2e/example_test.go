package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// examples/harness/session.sh works against a real mount.
func TestExampleHarness(t *testing.T) {
	testenv.NeedTool(t, "curl")
	testenv.NeedTool(t, "jq")
	w := newWorkspace(t)
	w.mount()
	script, _ := filepath.Abs("../../examples/harness/session.sh")
	cmd := exec.Command("sh", script, w.mnt)
	cmd.Env = append(w.env(), "PATH="+filepath.Dir(cowfsBin)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("session.sh: %v\n%s", err, out)
	}
	for _, want := range []string{
		`{"turn":3,"id":"call-3","changed_paths":`,
		"deleted tests/test_app.py by rm",
		"-print(\"hello, world\")",
		`"anchor":"msg-2"`,
		"truncate the conversation from message msg-2 on",
		"app.py is back to:\nprint(\"hello\")\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("session.sh output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(w.path("tests/test_app.py")); err != nil {
		t.Errorf("tests/test_app.py was not brought back: %v", err)
	}
	if _, err := os.Stat(w.path("NOTES.md")); err == nil {
		t.Errorf("NOTES.md, made in turn 2, is still there")
	}
}
