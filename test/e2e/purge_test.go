package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// cowfs purge removes the journal, the state directory and the private
// directory; it is refused while a daemon serves the workspace, follows
// no link planted in what it removes, and leaves a foreign .cowfs alone.
func TestPurge(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "k\n", "gone.txt": "g\n"})
	w.mount()
	state := filepath.Dir(w.status().Socket)
	w.cowfs("turn", "begin")
	w.sh(`rm gone.txt; echo new > new.txt`)
	w.cowfs("turn", "end")

	if _, errOut, code := w.run("purge"); code != 4 {
		t.Fatalf("purge while mounted: exit %d (%s), want %d", code, errOut, 4)
	}
	if _, err := os.Stat(filepath.Join(state, "journal")); err != nil {
		t.Fatalf("the refused purge removed the journal: %v", err)
	}
	w.cowfs("umount")

	// Links planted in what purge removes point at what it must not.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "precious"), []byte("p"), 0o644)
	for _, l := range []string{filepath.Join(state, "trap"), filepath.Join(w.dir, ".cowfs", "aside", "trap"), filepath.Join(state, "journal", "trap")} {
		if err := os.Symlink(outside, l); err != nil {
			t.Fatal(err)
		}
	}
	out := w.cowfs("purge")
	for _, p := range []string{filepath.Join(w.dir, ".cowfs"), filepath.Join(state, "journal"), state} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after purge (%v)", p, err)
		}
		if !strings.Contains(out, "removed "+p+"\n") {
			t.Errorf("purge does not say it removed %s: %q", p, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(b) != "p" {
		t.Errorf("purge reached through a link: %q %v", b, err)
	}
	w.wantFile("after purge", "keep.txt", "k\n")
	w.wantFile("after purge", "new.txt", "new\n")
	if _, errOut, code := w.run("purge"); code != 0 || !strings.Contains(errOut, "nothing to purge") {
		t.Errorf("purge again: exit %d: %s", code, errOut)
	}

	// A fresh start: no turns.
	w.mount()
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if len(l.Turns) != 0 {
		t.Errorf("turns after purge: %+v", l.Turns)
	}
	w.cowfs("umount")

	// A .cowfs that is not cowfs's is left alone.
	foreign := filepath.Join(w.dir, ".cowfs")
	os.RemoveAll(foreign)
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "mine"), []byte("x"), 0o644)
	if _, errOut, code := w.run("purge"); code == 0 || !strings.Contains(errOut, "cowfs did not make") && !strings.Contains(errOut, "mode") {
		t.Errorf("purge of a foreign .cowfs: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(foreign, "mine")); err != nil {
		t.Errorf("purge removed a foreign .cowfs: %v", err)
	}
}
