package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/journal"
)

// cowfs fsck --export writes what a journal holds, also a damaged one:
// markers, turns, and for every path the window's turns changed what it
// held when the latest of them began — the file's content, a symlink's
// target, or that nothing was there — and names what it cannot read.
func TestFsckExport(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": "a0\n", "d/b.txt": "b0\n", "keep.txt": "k\n"})
	w.mount()
	w.cowfs("turn", "begin", "--id", "t1", "--anchor", "msg-1")
	w.sh("echo a1 > a.txt; rm d/b.txt; echo new > c.txt; ln -s a.txt l")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin", "--id", "t2", "--anchor", "msg-2")
	w.sh("echo a2 > a.txt; rm l; ln -s keep.txt l")
	w.cowfs("turn", "end")
	w.cowfs("rollback", "t2") // a marker to export; the turns stay in the window
	state := filepath.Dir(w.status().Socket)
	w.cowfs("umount")

	check := func(dir string) (map[string]daemon.ExportedPath, []journal.Marker) {
		t.Helper()
		var idx []daemon.ExportedPath
		b, err := os.ReadFile(filepath.Join(dir, "index.json"))
		if err != nil || json.Unmarshal(b, &idx) != nil {
			t.Fatalf("index.json: %v: %s", err, b)
		}
		by := map[string]daemon.ExportedPath{}
		for _, e := range idx {
			by[string(e.Path)] = e
		}
		var ms []journal.Marker
		b, _ = os.ReadFile(filepath.Join(dir, "markers.json"))
		json.Unmarshal(b, &ms)
		var ts []journal.Turn
		b, _ = os.ReadFile(filepath.Join(dir, "turns.json"))
		if json.Unmarshal(b, &ts) != nil || len(ts) != 2 || ts[1].Anchor != "msg-2" {
			t.Errorf("turns.json: %s", b)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("the export directory's mode: %v %v", fi, err)
		}
		return by, ms
	}
	content := func(dir string, e daemon.ExportedPath) string {
		b, _ := os.ReadFile(filepath.Join(dir, e.File))
		return string(b)
	}

	dir := filepath.Join(t.TempDir(), "export")
	if out, errOut, code := w.run("fsck", "--export", dir); code != 0 {
		t.Fatalf("fsck --export of a sound journal: exit %d: %s %s", code, out, errOut)
	}
	by, ms := check(dir)
	if len(ms) != 1 || ms[0].Anchor != "msg-2" {
		t.Errorf("markers.json: %+v, want the rollback's marker at msg-2", ms)
	}
	want := map[string]struct {
		turn           uint64
		state, content string
	}{
		"a.txt":   {2, "file", "a1\n"},
		"d/b.txt": {1, "file", "b0\n"},
		"c.txt":   {1, "absent", ""},
		"l":       {2, "symlink", "a.txt"},
	}
	for p, wt := range want {
		e, ok := by[p]
		got := e.Target
		if e.State == "file" {
			got = content(dir, e)
		}
		if !ok || e.Turn != wt.turn || e.State != wt.state || got != wt.content {
			t.Errorf("%s: %+v (content %q), want turn %d, %s %q", p, e, got, wt.turn, wt.state, wt.content)
		}
	}
	if _, ok := by["keep.txt"]; ok {
		t.Errorf("keep.txt, which no turn changed, is exported")
	}

	// Damaged: the packs are gone. The overwritten file's pre-image is
	// named unreadable; the removed one, kept aside, still comes out.
	packs, _ := filepath.Glob(filepath.Join(state, "journal", "packs", "*"))
	for _, p := range packs {
		os.Remove(p)
	}
	dir2 := filepath.Join(t.TempDir(), "export")
	out, _, code := w.run("fsck", "--export", dir2)
	if code != 1 || !strings.Contains(out, "unreadable") {
		t.Errorf("fsck --export of a damaged journal: exit %d: %s", code, out)
	}
	by, _ = check(dir2)
	if e := by["a.txt"]; e.State != "unreadable" || e.Problem == "" {
		t.Errorf("a.txt with its pre-image lost: %+v", e)
	}
	if e := by["d/b.txt"]; e.State != "file" || content(dir2, e) != "b0\n" {
		t.Errorf("d/b.txt, kept aside: %+v", e)
	}

	// Refused: into the workspace, or a directory that holds something.
	if _, errOut, code := w.run("fsck", "--export", w.path("x")); code == 0 || !strings.Contains(errOut, "inside the workspace") {
		t.Errorf("export into the workspace: exit %d: %s", code, errOut)
	}
	if _, errOut, code := w.run("fsck", "--export", dir); code == 0 || !strings.Contains(errOut, "not empty") {
		t.Errorf("export into a directory that holds something: exit %d: %s", code, errOut)
	}
}
