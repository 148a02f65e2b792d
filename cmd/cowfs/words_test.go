package main

import (
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

// An error names the whole command that failed: "cowfs turn end:", not
// "cowfs end:", which is no command.
func TestErrorPrefixNamesCommand(t *testing.T) {
	ws := t.TempDir()
	env := []string{"COWFS_STATE_DIR=" + t.TempDir()}
	for _, c := range []struct {
		args   []string
		prefix string
	}{
		{[]string{"turn", "end"}, "cowfs turn end: "},
		{[]string{"turn", "step", "call_1"}, "cowfs turn step: "},
		{[]string{"turn", "begin", "--no-such-flag"}, "cowfs turn begin: "},
		{[]string{"turn", "end", "extra"}, "cowfs turn end: "},
		{[]string{"status"}, "cowfs status: "},
	} {
		_, stderr, code := cliAll(t, env, append([]string{"-w", ws}, c.args...)...)
		if code == 0 || !strings.HasPrefix(stderr, c.prefix) {
			t.Errorf("cowfs %s: exit %d, stderr %q; want it to begin %q", strings.Join(c.args, " "), code, stderr, c.prefix)
		}
	}
	// The argument count's message points at the command's own help.
	_, stderr, _ := cliAll(t, env, "-w", ws, "turn", "end", "extra")
	if !strings.Contains(stderr, "takes 0 arguments, got 1; see cowfs turn end --help") {
		t.Errorf("turn end extra: %q", stderr)
	}
}

// One path is "1 path", not "1 paths": in show's and log's summaries
// and in the rollback's partial summary.
func TestPlurals(t *testing.T) {
	h := newHistory(t)
	h.create("outside.txt", journal.Caller{Pid: 10, Comm: "vim"})
	h.begin("", "")
	h.create("one.txt", journal.Caller{Pid: 11, Comm: "touch"})
	h.end()
	h.close()

	out, _, code := h.cowfs("show", "1")
	if code != 0 || !strings.Contains(out, "; 1 path changed,") {
		t.Errorf("show 1: exit %d:\n%s", code, out)
	}
	out, _, code = h.cowfs("log")
	if code != 0 || !strings.Contains(out, "1 path changed outside turns") {
		t.Errorf("log: exit %d:\n%s", code, out)
	}
	out, _, code = h.cowfs("diff", "1", "--stat")
	if code != 0 || !strings.Contains(out, " 1 file changed, 1 insertion(+), 0 deletions(-)") {
		t.Errorf("diff --stat: exit %d:\n%s", code, out)
	}
	partial := rollbackSummary(ctl.RollbackResult{Target: 1, Failure: "no space", Counts: ctl.RollbackCounts{Skipped: 1}})
	if !strings.Contains(partial, "1 path not done or skipped") {
		t.Errorf("partial rollback: %q", partial)
	}
}
