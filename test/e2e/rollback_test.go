package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

func (w *workspace) rollback(args ...string) ctl.RollbackResult {
	w.t.Helper()
	var res ctl.RollbackResult
	w.cowfsJSON(&res, append([]string{"rollback"}, args...)...)
	return res
}

func actions(res ctl.RollbackResult) map[string]string {
	m := map[string]string{}
	for _, p := range res.Paths {
		m[string(p.Path)] = p.Action
	}
	return m
}

// The scenarios of a real agent turn, rolled back exactly, previewed,
// unreverted, rolled back again, and forgotten when the next turn begins.
func TestRollbackScenarios(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{
		"src/main.go":        "package main // x\n",
		"src/util.go":        "package main\n",
		"docs/a.md":          "a\n",
		"docs/b.md":          "b\n",
		"old/one.txt":        "1\n",
		"old/sub/two.txt":    "2\n",
		"ren/inner/file.txt": "in a renamed directory\n",
		"chmodme.sh":         "#!/bin/sh\n",
		"replace-me.txt":     "the original\n",
		"untouched.txt":      "nothing happens to me\n",
	})
	if err := os.Symlink("src/main.go", filepath.Join(w.dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(w.dir, "docs/a.md"), filepath.Join(w.dir, "docs/a-hard.md")); err != nil {
		t.Fatal(err)
	}
	w.mount()
	before := snapshot(t, w.mnt)

	w.cowfs("turn", "begin", "--id", "t1", "--anchor", "user-1")
	w.sh(`
mkdir -p build/out/x && echo o > build/out/x/o.txt
mv ren renamed
echo new > tmp && mv tmp replace-me.txt
rm -rf old
chmod 755 chmodme.sh
ln -sf docs/b.md link
ln -s src newlink
echo more >> docs/a-hard.md
ln src/util.go util-hard
sed -i s/x/y/ src/main.go
`)
	w.cowfs("turn", "end")
	after := snapshot(t, w.mnt)

	// A dry run lists every path with its action and changes nothing.
	plan := w.rollback("1", "--dry-run")
	want := map[string]string{
		"build": "delete", "build/out": "delete", "build/out/x": "delete", "build/out/x/o.txt": "delete",
		"ren": "recover", "renamed": "delete", "replace-me.txt": "restore",
		"old": "recover", "old/one.txt": "recover", "old/sub": "recover", "old/sub/two.txt": "recover",
		"chmodme.sh": "restore", "link": "restore", "newlink": "delete",
		"util-hard": "delete", "src/main.go": "restore",
	}
	got := actions(plan)
	for p, a := range want {
		if got[p] != a {
			t.Errorf("plan for %s: %q, want %q", p, got[p], a)
		}
	}
	// The write through a hard link restores the inode under one of
	// its names.
	if got["docs/a-hard.md"] != "restore" && got["docs/a.md"] != "restore" {
		t.Errorf("plan for the hard-linked file: %q / %q", got["docs/a-hard.md"], got["docs/a.md"])
	}
	if _, ok := got["untouched.txt"]; ok {
		t.Errorf("the plan touches untouched.txt")
	}
	if c := plan.Counts; c.DirsRemoved != 3 || c.DirsRecreated != 2 || c.Recovered != 3 || c.Deleted != 3 || c.Skipped != 0 || !plan.DryRun {
		t.Errorf("plan counts: %+v", c)
	}
	sameTree(t, w.mnt, after, "after a dry run")

	// The rollback: exactly the tree when turn 1 began, inodes and
	// mtimes included; the human line says what happened.
	out, _, code := w.run("rollback", "t1")
	if code != 0 || !strings.HasPrefix(out, "Rolled back to before turn 1: ") || !strings.Contains(out, "3 empty directories removed") {
		t.Fatalf("rollback: exit %d: %s", code, out)
	}
	sameTree(t, w.mnt, before, "after rollback 1")

	var ms ctl.MarkerList
	w.cowfsJSON(&ms, "markers")
	if len(ms.Markers) != 1 || ms.Markers[0].Turn != 1 || ms.Markers[0].Anchor != "user-1" || ms.Markers[0].ID != "t1" {
		t.Fatalf("markers: %+v", ms.Markers)
	}
	if n := len(ms.Markers[0].Note); n == 0 || n > 160 {
		t.Errorf("marker note has %d characters: %q", n, ms.Markers[0].Note)
	}
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if l.Turns[0].State != "reverted" || l.OutsideTurns != 0 {
		t.Errorf("after rollback: %+v", l)
	}

	// Unrevert puts back exactly what the rollback undid and withdraws
	// the marker.
	w.cowfs("unrevert")
	sameTree(t, w.mnt, after, "after unrevert")
	w.cowfsJSON(&ms, "markers")
	if len(ms.Markers) != 0 {
		t.Errorf("markers after unrevert: %+v", ms.Markers)
	}

	// Rolling back to the same point twice leaves one marker.
	w.rollback("1")
	w.rollback("1")
	sameTree(t, w.mnt, before, "after rolling back twice")
	w.cowfsJSON(&ms, "markers")
	if len(ms.Markers) != 1 {
		t.Errorf("markers after two rollbacks to one point: %+v", ms.Markers)
	}

	// Markers survive a restart; the next turn drops the reverted turn
	// for good, and with it the chance to unrevert.
	w.cowfs("umount")
	w.mount()
	w.cowfsJSON(&ms, "markers")
	if len(ms.Markers) != 1 {
		t.Errorf("markers after restart: %+v", ms.Markers)
	}
	w.cowfs("turn", "begin")
	if _, errOut, code := w.run("show", "1"); code != 6 {
		t.Errorf("show of a dropped turn: exit %d: %s", code, errOut)
	}
	w.cowfs("turn", "end")
	if _, errOut, code := w.run("unrevert"); code != 7 || !strings.Contains(errOut, "nothing to unrevert") {
		t.Errorf("unrevert after a new turn: exit %d: %s", code, errOut)
	}
	sameTree(t, w.mnt, before, "after the next turn")
	var l2 ctl.TurnList
	w.cowfsJSON(&l2, "log")
	if len(l2.Turns) != 1 || l2.Turns[0].Num != 2 {
		t.Errorf("turns after the next turn: %+v", l2.Turns)
	}
}

func TestRollbackGuards(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "original\n", "g": "other\n"})
	w.mount("--window", "3")

	w.cowfs("turn", "begin")
	w.sh("echo turn1 > f")
	// Refused while a turn is open.
	if _, errOut, code := w.run("rollback", "1"); code != 4 || !strings.Contains(errOut, "busy") {
		t.Errorf("rollback during a turn: exit %d: %s", code, errOut)
	}
	w.cowfs("turn", "end")

	// A change made outside a turn is a conflict: skipped and reported.
	w.sh("echo idle >> f; echo idle > g")
	res := w.rollback("1")
	if a := actions(res); a["f"] != "skip" || a["g"] != "skip" || res.Counts.Skipped != 2 {
		t.Fatalf("rollback over changes outside turns: %+v", res.Paths)
	}
	for _, p := range res.Paths {
		if !strings.Contains(p.Reason, "outside a turn") {
			t.Errorf("%s skipped because %q", p.Path, p.Reason)
		}
	}
	if b, _ := os.ReadFile(w.path("f")); string(b) != "turn1\nidle\n" {
		t.Errorf("f after a skipped rollback: %q", b)
	}
	// --force restores them too.
	w.cowfs("unrevert")
	res = w.rollback("1", "--force")
	if res.Counts.Skipped != 0 || res.Counts.Restored != 2 {
		t.Errorf("forced rollback: %+v", res)
	}
	for p, want := range map[string]string{"f": "original\n", "g": "other\n"} {
		if b, _ := os.ReadFile(w.path(p)); string(b) != want {
			t.Errorf("%s after a forced rollback: %q", p, b)
		}
	}

	// Out of the window: refused, naming the reachable range.
	for i := 2; i <= 6; i++ {
		w.cowfs("turn", "begin")
		w.sh("echo x >> g")
		w.cowfs("turn", "end")
	}
	if _, errOut, code := w.run("rollback", "2"); code != 6 || !strings.Contains(errOut, "turns 4 to 6") {
		t.Errorf("rollback out of the window: exit %d: %s", code, errOut)
	}
	if _, _, code := w.run("rollback", "99"); code != 5 {
		t.Errorf("rollback to a turn that never was: exit %d", code)
	}
	if _, _, code := w.run("unrevert"); code != 7 {
		t.Errorf("unrevert with nothing to unrevert: exit %d", code)
	}
	// undo rolls back the latest turn.
	before := string(mustRead(t, w.path("g")))
	w.cowfs("undo")
	if got := string(mustRead(t, w.path("g"))); got != strings.TrimSuffix(before, "x\n") {
		t.Errorf("after undo g is %q (was %q)", got, before)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A symlink swapped in for a directory cannot make a rollback write
// outside the workspace, whether the agent made it through the mount or
// something changed the backing directory behind cowfs's back.
func TestRollbackStaysInside(t *testing.T) {
	w := newWorkspace(t)
	// A separate mountpoint leaves the backing directory reachable.
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	outside := filepath.Join(filepath.Dir(w.dir), "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "f"), []byte("outside\n"), 0o644)
	w.seed(map[string]string{"d/f": "inside\n", "e/f": "inside e\n"})
	w.mount()

	// Through the mount: the agent replaces d with a symlink out.
	w.cowfs("turn", "begin")
	w.sh("echo changed > d/f; echo changed > e/f")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin")
	w.sh("rm -rf d && ln -s " + outside + " d")
	w.cowfs("turn", "end")
	// Behind cowfs's back: e becomes a symlink out.
	os.RemoveAll(filepath.Join(w.dir, "e"))
	os.Symlink(outside, filepath.Join(w.dir, "e"))

	res := w.rollback("1")
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "outside\n" {
		t.Fatalf("the rollback wrote outside the workspace: %q", b)
	}
	if b, _ := os.ReadFile(w.path("d/f")); string(b) != "inside\n" {
		t.Errorf("d/f after rollback: %q", b)
	}
	if fi, err := os.Lstat(w.path("d")); err != nil || !fi.IsDir() {
		t.Errorf("d is not a directory again: %v", err)
	}
	if a := actions(res); a["e/f"] != "skip" {
		t.Errorf("e/f, behind a symlink planted outside the mount, was %q, want skip (%+v)", a["e/f"], res.Paths)
	}
}
