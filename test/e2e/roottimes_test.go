package e2e

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// A rollback puts the workspace root's times back, as it does every
// other directory's (#15).
func TestRollbackRootTimes(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "k\n", "gone.txt": "g\n", "sub/f": "f\n"})
	old := time.Unix(1_600_000_000, 0)
	for _, p := range []string{w.dir, w.dir + "/sub"} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	w.mount()
	before := mtimes(t, w.mnt, "sub")
	w.cowfs("turn", "begin")
	w.sh(`echo new > new.txt; rm gone.txt; mkdir d; mv keep.txt kept.txt; touch sub/g`)
	w.cowfs("turn", "end")
	w.rollback("1")
	if got := mtimes(t, w.mnt, "sub"); got != before {
		t.Errorf("mtimes after the rollback: %v, want %v", got, before)
	}
}

// mtimes returns the mtimes of the mount's root and of rel.
func mtimes(t *testing.T, root, rel string) [2]int64 {
	t.Helper()
	var a, b syscall.Stat_t
	if err := syscall.Lstat(root, &a); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Lstat(root+"/"+rel, &b); err != nil {
		t.Fatal(err)
	}
	return [2]int64{a.Mtim.Nano(), b.Mtim.Nano()}
}

// Directories made and removed within a turn are no change of it, also
// when one replaced another (mv -T) before they went (#15).
func TestShowDirectoriesMadeAndRemoved(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "k\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh(`mkdir -p a/x b c; echo 1 > a/x/f; mv -T a b; mv -T c b/x2; rm -r b`)
	w.cowfs("turn", "end")
	if d := w.turn("1"); len(d.Changes) != 0 {
		t.Errorf("changes of a turn that left nothing: %+v", d.Changes)
	}
}
