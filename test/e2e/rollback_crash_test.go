package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// kill -9 in the middle of the rollback of a large turn, then a
// restart: the interrupted rollback is finished from its stored plan
// and the workspace ends exactly at the target, undoable as usual.
func TestKillDuringRollback(t *testing.T) {
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	const n = 200
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("src/f%04d", i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 20)
		files[fmt.Sprintf("tree/d%02d/g%04d", i%10, i)] = fmt.Sprintf("tree file %d\n", i)
	}
	w.seed(files)
	paused, _ := w.pauseRollbacks(20)
	w.mount()
	before := snapshot(t, w.mnt)

	w.cowfs("turn", "begin", "--anchor", "m1")
	for i := 0; i < n; i++ {
		if err := os.WriteFile(w.path(fmt.Sprintf("src/f%04d", i)), []byte("rewritten\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.sh("rm -rf tree")
	w.cowfs("turn", "end")
	after := snapshot(t, w.mnt)
	pid := w.status().Pid

	// The rollback brings the tree back first (newest records first),
	// then the files. Kill the daemon while it is paused after step 20.
	w.killDuringRollback(pid, paused, "1")
	w.daemonEnv = nil // the restart runs through
	// Half done: the workspace is between the two states.
	if b, _ := os.ReadFile(filepath.Join(w.dir, "src/f0000")); string(b) != "rewritten\n" {
		t.Fatalf("the rollback went on past the pause (src/f0000 is back)")
	}

	out, errOut, code := w.run("mount", "--background", w.dir, "--mountpoint", w.mnt)
	if code != 0 {
		t.Fatalf("remount: exit %d: %s%s", code, out, errOut)
	}
	w.pids = append(w.pids, w.status().Pid)
	if !strings.Contains(errOut, "interrupted by a crash") {
		t.Errorf("the restart does not say it finished the rollback: %q", errOut)
	}
	sameTree(t, w.mnt, before, "after the interrupted rollback was finished")

	var ms ctl.MarkerList
	w.cowfsJSON(&ms, "markers")
	if len(ms.Markers) != 1 || ms.Markers[0].Anchor != "m1" {
		t.Errorf("markers: %+v", ms.Markers)
	}
	w.cowfs("unrevert")
	sameTree(t, w.mnt, after, "after unreverting the finished rollback")
}
