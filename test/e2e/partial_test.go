package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/testenv"
)

// A rollback whose step fails for a reason other than a conflict (here:
// the backing file is immutable, so it cannot be opened for writing)
// is partial: exit 9, "complete": false, no marker, the turn not
// reverted, a new turn refused; retried once the cause is gone, the
// same rollback finishes exactly.
func TestPartialRollbackRetried(t *testing.T) {
	testenv.NeedTool(t, "chattr")
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	w.seed(map[string]string{"a.txt": "one\n", "b.txt": "two\n"})
	w.mount()
	before := snapshot(t, w.mnt)
	w.cowfs("turn", "begin", "--anchor", "m1")
	w.sh("echo TWO > b.txt; echo ONE > a.txt") // a's record is newer: undone first
	w.cowfs("turn", "end")
	after := snapshot(t, w.mnt)

	b := filepath.Join(w.dir, "b.txt")
	if out, err := exec.Command("chattr", "+i", b).CombinedOutput(); err != nil {
		testenv.Skip(t, "the backing filesystem has no immutable flag: "+string(out))
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", b).Run() })

	// chattr changed b.txt's ctime outside the mount: force past that
	// conflict, to the failure.
	res, code := rollbackJSON(w, "1", "--force")
	if code != 9 || res.Complete || res.Failure == "" || res.Marker != nil {
		t.Fatalf("rollback with an immutable file: exit %d, %+v", code, res)
	}
	if got := pathReason(res, "b.txt"); got == "" {
		t.Errorf("the failed path is not reported: %+v", res.Paths)
	}
	if got, _ := os.ReadFile(w.path("a.txt")); string(got) != "one\n" {
		t.Errorf("a.txt, restored before the failure: %q", got)
	}
	var ms ctl.MarkerList
	w.cowfsJSON(&ms, "markers")
	if len(ms.Markers) != 0 {
		t.Errorf("a partial rollback left markers: %+v", ms.Markers)
	}
	var tl ctl.TurnList
	w.cowfsJSON(&tl, "log")
	if len(tl.Turns) != 1 || tl.Turns[0].State != ctl.StateClosed {
		t.Errorf("turns after a partial rollback: %+v", tl.Turns)
	}
	if _, _, code := w.run("turn", "begin"); code != 4 {
		t.Errorf("turn begin during a partial rollback: exit %d, want 4 (busy)", code)
	}
	if _, _, code := w.run("rollback", "2"); code == 0 {
		t.Errorf("a rollback to another turn ran during a partial rollback")
	}

	exec.Command("chattr", "-i", b).Run()
	res, code = rollbackJSON(w, "1")
	if code != 0 || !res.Complete || res.Marker == nil || res.Marker.Anchor != "m1" {
		t.Fatalf("retried rollback: exit %d, %+v", code, res)
	}
	sameTree(t, w.mnt, before, "after the retried rollback")
	w.cowfsJSON(&tl, "log")
	if len(tl.Turns) != 1 || tl.Turns[0].State != ctl.StateReverted {
		t.Errorf("turns after the retried rollback: %+v", tl.Turns)
	}
	w.cowfs("unrevert")
	sameTree(t, w.mnt, after, "after unreverting the retried rollback")
}

// A path that keeps failing does not hold the rollback hostage: the
// first run stops at it, partial; the same rollback again tries it once
// more, skips it when it fails again, reports why, and finishes the
// rest — marker and all. Its record stays in effect.
func TestPartialRollbackFinishedPastStuckPath(t *testing.T) {
	testenv.NeedTool(t, "chattr")
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	w.seed(map[string]string{"a.txt": "one\n", "b.txt": "two\n", "c.txt": "three\n"})
	w.mount()
	w.cowfs("turn", "begin", "--anchor", "m1")
	w.sh("echo ONE > a.txt; echo TWO > b.txt; echo THREE > c.txt") // undone newest first: c, b, a
	w.cowfs("turn", "end")

	b := filepath.Join(w.dir, "b.txt")
	if out, err := exec.Command("chattr", "+i", b).CombinedOutput(); err != nil {
		testenv.Skip(t, "the backing filesystem has no immutable flag: "+string(out))
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", b).Run() })

	res, code := rollbackJSON(w, "1", "--force")
	if code != 9 || res.Complete {
		t.Fatalf("rollback with an immutable file: exit %d, %+v", code, res)
	}
	if got, _ := os.ReadFile(w.path("a.txt")); string(got) != "ONE\n" {
		t.Fatalf("a.txt, after the step that failed: %q; want it not reached yet", got)
	}
	res, code = rollbackJSON(w, "1", "--force")
	if code != 0 || !res.Complete || res.Marker == nil || res.Marker.Anchor != "m1" {
		t.Fatalf("retried rollback past a path that keeps failing: exit %d, %+v", code, res)
	}
	if r := pathReason(res, "b.txt"); !strings.Contains(r, "skipped on retry") || !strings.Contains(r, "b.txt") {
		t.Errorf("b.txt's reason: %q, want it failed and skipped on retry", r)
	}
	if res.Counts.Skipped != 1 || res.Counts.Restored != 2 {
		t.Errorf("counts: %+v, want 2 restored and 1 skipped", res.Counts)
	}
	for name, want := range map[string]string{"a.txt": "one\n", "b.txt": "TWO\n", "c.txt": "three\n"} {
		if got, _ := os.ReadFile(w.path(name)); string(got) != want {
			t.Errorf("%s after the finished rollback: %q, want %q", name, got, want)
		}
	}
	var tl ctl.TurnList
	w.cowfsJSON(&tl, "log")
	if len(tl.Turns) != 1 || tl.Turns[0].State != ctl.StateReverted {
		t.Errorf("turns after the finished rollback: %+v", tl.Turns)
	}
}

// The journal's filesystem fills up between a turn and its rollback:
// the rollback cannot journal what it overwrites, so it stops, partial,
// and loses nothing; once space is freed, the same rollback finishes.
func TestPartialRollbackJournalFull(t *testing.T) {
	w := newWorkspace(t)
	journal := journalFS(t, w, "256m")
	jfs := filepath.Dir(journal)
	big := randomFile(24 << 20)
	w.seed(map[string]string{"small.txt": "small\n"})
	os.WriteFile(filepath.Join(w.dir, "big.bin"), big, 0o644)
	w.mount("--journal", journal)
	before := snapshot(t, w.mnt)
	w.cowfs("turn", "begin")
	w.sh("head -c 25165824 /dev/urandom > big.bin; echo SMALL > small.txt")
	w.cowfs("turn", "end")

	// Leave 8 MiB: less than restoring big.bin must journal first.
	var st unix.Statfs_t
	unix.Statfs(jfs, &st)
	filler := filepath.Join(jfs, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize-8<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()

	res, code := rollbackJSON(w, "1")
	if code != 9 || res.Complete || res.Marker != nil {
		t.Fatalf("rollback on a full journal: exit %d, %+v", code, res)
	}
	if got, _ := os.ReadFile(w.path("big.bin")); len(got) != len(big) {
		t.Fatalf("big.bin is %d bytes after the partial rollback", len(got))
	}
	os.Remove(filler)
	res, code = rollbackJSON(w, "1")
	if code != 0 || !res.Complete || res.Marker == nil {
		t.Fatalf("retried rollback: exit %d, %+v", code, res)
	}
	sameTree(t, w.mnt, before, "after the retried rollback")
}

// rollbackJSON runs 'cowfs rollback TURN --json' and returns its result
// and exit code.
func rollbackJSON(w *workspace, turn string, flags ...string) (ctl.RollbackResult, int) {
	w.t.Helper()
	out, errOut, code := w.run(append([]string{"rollback", turn, "--json"}, flags...)...)
	var res ctl.RollbackResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		w.t.Fatalf("rollback %s: exit %d, not JSON: %q %s", turn, code, out, errOut)
	}
	return res, code
}

// pathReason is the reason res gives for skipping path, or "".
func pathReason(res ctl.RollbackResult, path string) string {
	for _, p := range res.Paths {
		if string(p.Path) == path && p.Action == ctl.ActionSkip {
			return p.Reason
		}
	}
	return ""
}
