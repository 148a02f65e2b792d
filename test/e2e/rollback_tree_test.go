package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// asideEntries counts what the backing directory's aside area holds.
func asideEntries(t *testing.T, backing string) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(backing, ".cowfs", "aside"))
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// A tree a turn created goes aside whole, in one rename, and comes back
// whole on unrevert; a created tree that also holds something no
// rolled-back turn made is undone entry by entry, keeping that.
func TestRollbackCreatedTree(t *testing.T) {
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view") // to see the aside area
	os.Mkdir(w.mnt, 0o755)
	w.seed(map[string]string{"keep.txt": "kept\n"})
	w.mount()
	before := snapshot(t, w.mnt)

	w.cowfs("turn", "begin")
	for i := 0; i < 300; i++ {
		p := w.path(fmt.Sprintf("node_modules/pkg%d/lib/f%d.js", i%7, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("module %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.sh(`ln -s ../keep.txt node_modules/link && mkdir -p node_modules/empty/dir && echo x > build.log`)
	w.cowfs("turn", "end")
	after := snapshot(t, w.mnt)

	held := asideEntries(t, w.dir)
	res := w.rollback("1")
	if res.Counts.Skipped != 0 || res.Counts.Deleted != 302 {
		t.Errorf("rollback counts: %+v", res.Counts)
	}
	sameTree(t, w.mnt, before, "after rolling back the created tree")
	// node_modules went aside whole; build.log by itself.
	if got := asideEntries(t, w.dir) - held; got != 2 {
		t.Errorf("the rollback put %d entries aside, want 2 (the tree, and build.log)", got)
	}
	var un ctl.RollbackResult
	w.cowfsJSON(&un, "unrevert")
	sameTree(t, w.mnt, after, "after unrevert")
	// The tree came back in one rename; every path in it is reported.
	if un.Counts.Recovered != 302 || un.Counts.Skipped != 0 {
		t.Errorf("unrevert counts: %+v", un.Counts)
	}

	// A file made outside any turn inside the created tree: the tree is
	// undone entry by entry, the file stays and is reported.
	w.sh(`echo mine > node_modules/pkg0/mine.txt`)
	res = w.rollback("1")
	if got := actions(res)["node_modules/pkg0/mine.txt"]; got != "skip" {
		t.Errorf("the outside file's action: %q, want skip", got)
	}
	if res.Counts.Skipped == 0 {
		t.Errorf("nothing reported skipped: %+v", res.Counts)
	}
	if b, err := os.ReadFile(w.path("node_modules/pkg0/mine.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("the outside file after rollback: %q, %v", b, err)
	}
	if _, err := os.Stat(w.path("node_modules/pkg1")); !os.IsNotExist(err) {
		t.Errorf("the rest of the created tree is still there: %v", err)
	}
}
