package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// runIn runs the cowfs CLI in dir with exactly args (no -w), and
// returns its stderr and exit code.
func (w *workspace) runIn(dir string, args ...string) (string, int) {
	w.t.Helper()
	cmd := exec.Command(cowfsBin, args...)
	cmd.Dir, cmd.Env = dir, w.env()
	var e bytes.Buffer
	cmd.Stderr = &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		w.t.Fatalf("cowfs %q: %v", args, err)
	}
	return e.String(), cmd.ProcessState.ExitCode()
}

// An empty path — WORKSPACE, -w, --mountpoint, --journal — is refused
// (exit 2), never taken for the current directory, and leaves nothing
// behind: run inside a workspace that has a journal, purge keeps it;
// run in a fresh directory, mount and run mount nothing there and make
// no state directory.
func TestEmptyPathRefused(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": "a\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo b > a.txt")
	w.cowfs("turn", "end")
	w.umount()
	fresh := filepath.Join(filepath.Dir(w.dir), "fresh")
	if err := os.Mkdir(fresh, 0o755); err != nil {
		t.Fatal(err)
	}
	entries := func(dir string) []string {
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	states := entries(w.state)
	for _, c := range []struct {
		dir  string
		args []string
	}{
		{w.dir, []string{"purge", ""}},
		{w.dir, []string{"-w", "", "purge"}},
		{w.dir, []string{"purge", "--journal", ""}},
		{w.dir, []string{"fsck", ""}},
		{fresh, []string{"mount", "--background", ""}},
		{fresh, []string{"-w", "", "mount", "--background", "--mountpoint", "", fresh}},
		{fresh, []string{"mount", "--background", "--journal", "", fresh}},
		{fresh, []string{"-w", "", "run", "--", "true"}},
		{fresh, []string{"run", "--journal", "", "--", "true"}},
	} {
		errOut, code := w.runIn(c.dir, c.args...)
		if mounted(c.dir) {
			t.Errorf("cowfs %q mounted %s", c.args, c.dir)
			w.runIn("/", "umount", c.dir)
		}
		if code != 2 || !strings.Contains(errOut, "is empty") {
			t.Errorf("cowfs %q in %s: exit %d, want 2 and a message that says the path is empty: %s", c.args, c.dir, code, errOut)
		}
	}
	if got := entries(w.state); !slices.Equal(got, states) {
		t.Errorf("state directories: %v, before: %v", got, states)
	}
	if got := entries(fresh); len(got) > 0 {
		t.Errorf("%s holds %v", fresh, got)
	}
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if len(l.Turns) != 1 {
		t.Errorf("the journal after the refused purges: %+v", l.Turns)
	}
}
