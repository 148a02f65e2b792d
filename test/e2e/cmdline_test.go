package e2e

import (
	"strings"
	"testing"
)

// A change names the process that made it by its whole command line,
// not the 15 bytes of its comm: in show, show --json and events.
func TestChangeCommandLine(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": "a\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh(`cp a.txt "copy of a with a long name.txt"`)
	w.cowfs("turn", "end")

	const want = "cp a.txt copy of a with a long name.txt"
	d := w.turn("1")
	if len(d.Changes) != 1 || d.Changes[0].Command != "cp" || d.Changes[0].CommandLine != want {
		t.Errorf("show --json: %+v", d.Changes)
	}
	if out := w.cowfs("show", "1"); !strings.Contains(out, want+" pid ") {
		t.Errorf("show 1:\n%s", out)
	}
	out := w.cowfs("events")
	if !strings.Contains(out, "by "+want+" (pid ") {
		t.Errorf("events:\n%s", out)
	}
	var found bool
	for _, line := range strings.Split(w.cowfs("events", "--json"), "\n") {
		found = found || strings.Contains(line, `"command_line":"`+want+`"`)
	}
	if !found {
		t.Errorf("events --json carry no command_line %q", want)
	}
}
