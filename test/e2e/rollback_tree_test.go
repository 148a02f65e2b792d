package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/testenv"
)

// aside lists what the backing directory's aside area holds.
func aside(t *testing.T, backing string) []os.DirEntry {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(backing, ".cowfs", "aside"))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// asideEntries counts what the aside area holds.
func asideEntries(t *testing.T, backing string) int { return len(aside(t, backing)) }

// asideDirs counts the directories the aside area holds.
func asideDirs(t *testing.T, backing string) int {
	n := 0
	for _, e := range aside(t, backing) {
		if e.IsDir() {
			n++
		}
	}
	return n
}

// mountBeside mounts a workspace seeded with seed at a mountpoint beside
// its backing directory (not over it), so the aside area can be seen.
func mountBeside(t *testing.T, seed map[string]string) *workspace {
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	w.seed(seed)
	w.mount()
	return w
}

// A tree a turn created goes aside whole, in one rename, and comes back
// whole on unrevert; a created tree that also holds something no
// rolled-back turn made is undone entry by entry, keeping that.
func TestRollbackCreatedTree(t *testing.T) {
	w := mountBeside(t, map[string]string{"keep.txt": "kept\n"})
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

// TestRollbackGitRepositoryInOneRename: a turn that made a git
// repository (objects written under a temporary name, linked to their
// own and unlinked; the index renamed over itself) is undone by moving
// the repository's tree aside whole, like any tree the turn created —
// the aside area's own names for the unlinked temporary files, kept
// while the kernel knows them, are not names the tree must account
// for. Before, every object and directory went aside one by one.
func TestRollbackGitRepositoryInOneRename(t *testing.T) {
	testenv.NeedTool(t, "git")
	w := mountBeside(t, map[string]string{"keep.txt": "kept\n"})
	before := snapshot(t, w.mnt)

	w.cowfs("turn", "begin")
	w.sh(`mkdir repo && cd repo && for i in $(seq 40); do echo "file $i" > f$i.txt; done
git init -q && git add -A && git -c user.name=t -c user.email=t@localhost commit -qm one
echo more >> f1.txt && git add -A && git -c user.name=t -c user.email=t@localhost commit -qm two`)
	w.cowfs("turn", "end")
	after := snapshot(t, w.mnt)

	held := asideDirs(t, w.dir)
	res := w.rollback("1")
	if res.Counts.Skipped != 0 || res.Counts.Deleted < 40 {
		t.Errorf("rollback counts: %+v", res.Counts)
	}
	sameTree(t, w.mnt, before, "after rolling back the repository")
	if got := asideDirs(t, w.dir) - held; got != 1 {
		t.Errorf("the rollback put %d directories aside, want 1 (the repository's tree)", got)
	}
	w.cowfsJSON(new(ctl.RollbackResult), "unrevert")
	sameTree(t, w.mnt, after, "after unrevert")
	w.sh(`cd repo && git log --oneline | wc -l | grep -qx 2 && git fsck --no-progress 2>&1 | grep -v "^dangling" | (! grep .)`)
}
