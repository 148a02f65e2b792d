package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMountErrors(t *testing.T) {
	w := newWorkspace(t)

	// A workspace that does not exist.
	_, errOut, code := w.run("mount", filepath.Join(w.dir, "missing"))
	if code != 8 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("missing workspace: exit %d: %s", code, errOut)
	}

	// Already mounted by a live cowfs.
	w.mount()
	_, errOut, code = w.run("mount", "--background", w.dir)
	if code != 8 || !strings.Contains(errOut, "already mounted") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("second mount: exit %d: %q", code, errOut)
	}

	// A journal another daemon holds.
	other := t.TempDir()
	_, errOut, code = w.run("mount", "--background", "--journal", w.status().Journal, other)
	if code != 8 || !strings.Contains(errOut, "locked by another process") {
		t.Errorf("locked journal: exit %d: %s", code, errOut)
	}
	if mounted(other) {
		t.Errorf("%s was mounted despite the error", other)
	}

	// Bad flags.
	if _, errOut, code = w.run("mount", "--window", "0", other); code != 2 {
		t.Errorf("--window 0: exit %d: %s", code, errOut)
	}
}

// With --mountpoint the view appears elsewhere and the CLI finds the
// daemon from either path.
func TestMountpoint(t *testing.T) {
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	w.seed(map[string]string{"f": "old\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo new > f")
	w.cowfs("turn", "end")
	if got := w.cowfs("cat", "--at", "1", "f"); got != "old\n" {
		t.Errorf("cat through the mountpoint: %q", got)
	}
	// run puts -w MOUNTPOINT first; a later -w wins.
	byBacking := w.cowfs("-w", w.dir, "cat", "--at", "1", "f")
	if byBacking != "old\n" {
		t.Errorf("cat through the backing dir: %q", byBacking)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "f")); string(b) != "new\n" {
		t.Errorf("backing file: %q", b)
	}
}

// A subdirectory of a mounted workspace finds its daemon.
func TestFindFromSubdirectory(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a/b/c.txt": "x"})
	w.mount()
	sub := w.mnt
	w.mnt = w.path("a/b")
	defer func() { w.mnt = sub }()
	if st := w.status(); st.Workspace != w.dir {
		t.Errorf("status from a subdirectory names %s", st.Workspace)
	}
}
