package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

func TestTurnLifecycle(t *testing.T) {
	w := newWorkspace(t)
	// A separate mountpoint keeps the backing directory visible.
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	w.mount("--window", "2")

	// Ending with no open turn is a conflict (exit 7); so is a second
	// begin while one is open (busy, exit 4).
	if _, errOut, code := w.run("turn", "end"); code != 7 || !strings.Contains(errOut, "no turn is open") {
		t.Errorf("end without a turn: exit %d: %s", code, errOut)
	}
	w.cowfs("turn", "begin", "--id", "a")
	if _, errOut, code := w.run("turn", "begin"); code != 4 || !strings.Contains(errOut, "busy") {
		t.Errorf("second begin: exit %d: %s", code, errOut)
	}
	w.sh("echo 1 > one")
	w.cowfs("turn", "end")

	// Harness ids are unique and not numbers.
	if _, _, code := w.run("turn", "begin", "--id", "a"); code != 7 {
		t.Errorf("duplicate id: exit %d", code)
	}
	if _, _, code := w.run("turn", "begin", "--id", "42"); code != 2 {
		t.Errorf("numeric id: exit %d", code)
	}

	// Changes between turns are recorded as outside a turn.
	w.sh("echo idle > idle")

	for i := 2; i <= 4; i++ {
		w.cowfs("turn", "begin", "--anchor", fmt.Sprintf("msg-%d", i))
		w.sh(fmt.Sprintf("echo %d >> one; rm -f gone-%d; echo x > gone-%d", i, i-1, i))
		w.cowfs("turn", "end")
	}
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if len(l.Turns) != 2 || l.Turns[0].Num != 3 || l.Turns[1].Num != 4 {
		t.Fatalf("window of 2 keeps %+v", l.Turns)
	}
	if l.Turns[1].Anchor != "msg-4" || l.Turns[1].ChangedPaths != 3 || l.Turns[1].JournalBytes == 0 {
		t.Errorf("turn 4: %+v", l.Turns[1])
	}
	// A turn that left the window is out_of_window (exit 6) and the
	// reachable range is named; one that never was is not_found (5).
	if _, errOut, code := w.run("show", "1"); code != 6 || !strings.Contains(errOut, "turns 3 to 4") {
		t.Errorf("show 1: exit %d: %s", code, errOut)
	}
	if _, _, code := w.run("show", "9"); code != 5 {
		t.Errorf("show 9: exit %d", code)
	}
	if _, _, code := w.run("cat", "--at", "nope", "one"); code != 5 {
		t.Errorf("cat at an unknown id: exit %d", code)
	}
	// Paths that leave the workspace are refused.
	if _, errOut, code := w.run("cat", "--at", "3", "../../etc/passwd"); code != 2 {
		t.Errorf("cat of an escaping path: exit %d: %s", code, errOut)
	}
	if _, _, code := w.run("cat", "--at", "3", "/etc/passwd"); code != 2 {
		t.Errorf("cat of an absolute path outside: exit %d", code)
	}

	// Pruning freed the inodes kept aside for turns 1 and 2.
	aside, _ := os.ReadDir(filepath.Join(w.dir, ".cowfs", "aside"))
	if len(aside) != 2 {
		var names []string
		for _, e := range aside {
			names = append(names, e.Name())
		}
		t.Errorf("aside area holds %d entries %v, want 2 (turns 3 and 4 each removed one file)", len(aside), names)
	}
	if got := w.cowfs("cat", "--at", "4", "one"); got != "1\n2\n3\n" {
		t.Errorf("one at 4: %q", got)
	}
	if got := w.cowfs("cat", "--at", "3", "one"); got != "1\n2\n" {
		t.Errorf("one at 3: %q", got)
	}
}
