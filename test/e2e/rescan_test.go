package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
)

// outsideWorkspace is a workspace mounted at a separate mountpoint, so
// the test can change the backing directory behind the mount's back.
func outsideWorkspace(t *testing.T, files map[string]string) *workspace {
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	w.seed(files)
	w.mount()
	return w
}

// behind changes the backing directory directly.
func (w *workspace) behind(script string) {
	w.t.Helper()
	w.shIn(w.dir, script)
}

func (w *workspace) shIn(dir, script string) {
	w.t.Helper()
	saved := w.mnt
	w.mnt = dir
	defer func() { w.mnt = saved }()
	w.sh(script)
}

// outsideEvents returns the changes found outside the mount, by path.
func (w *workspace) outsideEvents() map[string]ctl.Event {
	w.t.Helper()
	out := map[string]ctl.Event{}
	dec := json.NewDecoder(strings.NewReader(w.cowfs("events", "--json")))
	for dec.More() {
		var e ctl.Event
		if err := dec.Decode(&e); err != nil {
			w.t.Fatal(err)
		}
		if e.Outside {
			out[string(e.Path)] = e
		}
	}
	return out
}

func byPath(res ctl.RollbackResult) map[string]ctl.PathAction {
	m := map[string]ctl.PathAction{}
	for _, p := range res.Paths {
		m[string(p.Path)] = p
	}
	return m
}

// The reproduction: edits made directly in the backing
// directory between turns are found at the next boundary, reported,
// and never overwritten by a rollback unless forced.
func TestOutsideChangesBetweenTurns(t *testing.T) {
	w := outsideWorkspace(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n"})
	w.cowfs("turn", "begin")
	w.sh("echo A > a.txt; echo B > b.txt; echo C > c.txt; echo D > d.txt; echo e > e.txt")
	w.cowfs("turn", "end")
	w.behind("echo outside >> a.txt; rm b.txt; chmod 600 c.txt")
	w.cowfs("turn", "begin")
	w.cowfs("turn", "end")

	ev := w.outsideEvents()
	for p, kind := range map[string]string{"a.txt": "modified", "b.txt": "deleted", "c.txt": "modified"} {
		if e, ok := ev[p]; !ok || e.Kind != kind || e.Pid != 0 {
			t.Errorf("event for %s: %+v (found %v), want %s outside the mount", p, e, ok, kind)
		}
	}
	if _, ok := ev["d.txt"]; ok {
		t.Errorf("d.txt, unchanged outside the mount, has an outside event")
	}

	dry := byPath(w.rollback("1", "--dry-run"))
	for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
		if a := dry[p]; a.Action != ctl.ActionSkip || a.Reason != "changed outside the mount" {
			t.Errorf("dry run for %s: %+v", p, a)
		}
	}
	if dry["d.txt"].Action != ctl.ActionRestore || dry["e.txt"].Action != ctl.ActionDelete {
		t.Errorf("dry run for d.txt, e.txt: %+v %+v", dry["d.txt"], dry["e.txt"])
	}
	res := byPath(w.rollback("1"))
	if res["a.txt"].Action != ctl.ActionSkip {
		t.Errorf("rollback of a.txt: %+v", res["a.txt"])
	}
	w.wantFile("after rollback", "a.txt", "A\noutside\n")
	w.wantFile("after rollback", "b.txt", "")
	w.wantFile("after rollback", "d.txt", "d\n")
	if fi, _ := os.Stat(w.path("c.txt")); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("c.txt lost the mode set outside the mount: %v", fi)
	}

	// --force overwrites what it can: a.txt's whole pre-image is
	// journaled; b.txt is gone, which the journal cannot undo.
	w.cowfs("unrevert")
	res = byPath(w.rollback("1", "--force"))
	w.wantFile("after a forced rollback", "a.txt", "a\n")
	w.wantFile("after a forced rollback", "c.txt", "c\n")
	if res["b.txt"].Action != ctl.ActionSkip {
		t.Errorf("forced rollback of b.txt, deleted outside the mount: %+v", res["b.txt"])
	}
}

// A change outside the mount during a turn is part of that turn's
// record ("show"), and readers through the mount see it afterwards even
// though the kernel cached the old content and attributes.
func TestOutsideChangeDuringTurn(t *testing.T) {
	w := outsideWorkspace(t, map[string]string{"a.txt": "old\n", "gone.txt": "g\n", "mixed.txt": "m\n"})
	// Turn 1 changes both through the mount, so that they are tracked;
	// turn 2 only reads them, filling the kernel's caches.
	w.cowfs("turn", "begin")
	w.sh("echo new > a.txt; echo g2 > gone.txt")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin")
	// sync: the kernel's writeback cache would otherwise send the write
	// after the change behind the mount.
	w.sh("cat a.txt gone.txt >/dev/null; echo 'through the mount' > mixed.txt; sync mixed.txt")
	if b, _ := os.ReadFile(w.path("a.txt")); string(b) != "new\n" {
		t.Fatalf("a.txt through the mount: %q", b)
	}
	// The write behind the mount to mixed.txt must land on a later tick
	// of the kernel's coarse clock than the mount's stamp of its own
	// write, or its mtime cannot tell the two apart (rescan's package
	// doc): wait until the file's mtime would move.
	waitClockTick(t, filepath.Join(w.dir, "mixed.txt"), filepath.Join(filepath.Dir(w.dir), "tick"))
	w.behind("echo 'changed behind the mount' > a.txt; rm gone.txt; echo 'and behind it' >> mixed.txt")
	w.sh("echo touched > gone2.txt; rm gone2.txt") // unrelated
	w.cowfs("turn", "end")

	d := w.turn("2")
	got := map[string]ctl.Change{}
	for _, c := range d.Changes {
		got[string(c.Path)] = c
	}
	for _, p := range []string{"a.txt", "mixed.txt"} {
		if c := got[p]; !c.Outside || c.Kind != "modified" {
			t.Errorf("show 2, %s: %+v", p, c)
		}
	}
	// mixed.txt was changed through the mount, then outside it: rolling
	// back turn 2 would destroy the second change.
	if res := byPath(w.rollback("2", "--dry-run")); res["mixed.txt"].Reason != "changed outside the mount" {
		t.Errorf("dry run of mixed.txt: %+v", res["mixed.txt"])
	}
	if b, _ := os.ReadFile(w.path("a.txt")); string(b) != "changed behind the mount\n" {
		t.Errorf("a.txt through the mount after the boundary: %q", b)
	}
	if _, err := os.Stat(w.path("gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt through the mount after the boundary: %v", err)
	}
	out := w.cowfs("show", "2")
	if !strings.Contains(out, "outside the mount") {
		t.Errorf("show does not say what changed outside the mount:\n%s", out)
	}
	// Rolling back turn 2 would destroy the change made during it; so
	// would rolling back turn 1, whose change to a.txt it overwrote.
	for _, n := range []string{"2", "1"} {
		res := byPath(w.rollback(n))
		if a := res["a.txt"]; a.Action != ctl.ActionSkip || a.Reason != "changed outside the mount" {
			t.Errorf("rollback %s of a.txt: %+v", n, a)
		}
		w.wantFile("after rollback "+n, "a.txt", "changed behind the mount\n")
	}
}

// A rollback between boundaries looks first: a change made outside the
// mount a moment before is not overwritten.
func TestOutsideChangeBeforeRollback(t *testing.T) {
	w := outsideWorkspace(t, map[string]string{"a.txt": "a\n"})
	w.cowfs("turn", "begin")
	w.sh("echo A > a.txt")
	w.cowfs("turn", "end")
	w.behind("echo outside > a.txt")
	res := byPath(w.rollback("1"))
	if a := res["a.txt"]; a.Action != ctl.ActionSkip || a.Reason != "changed outside the mount" {
		t.Errorf("rollback of a.txt: %+v", a)
	}
	w.wantFile("after rollback", "a.txt", "outside\n")
}

// Files changed while cowfs was down (here: killed) are found at start.
func TestOutsideChangeWhileDown(t *testing.T) {
	w := outsideWorkspace(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	w.cowfs("turn", "begin")
	w.sh("echo A > a.txt; echo B > b.txt")
	w.cowfs("turn", "end")
	w.killDaemon(w.status().Pid)
	w.behind("echo 'while down' > a.txt")
	out, errOut, code := w.run("mount", "--background", w.dir, "--mountpoint", w.mnt)
	if code != 0 {
		t.Fatalf("remount: exit %d: %s%s", code, out, errOut)
	}
	w.pids = append(w.pids, w.status().Pid)
	if !strings.Contains(errOut+out, "changed while cowfs was not running") {
		t.Errorf("the restart does not say what changed while it was down: %q", errOut+out)
	}
	res := byPath(w.rollback("1"))
	if a := res["a.txt"]; a.Action != ctl.ActionSkip || a.Reason != "changed outside the mount" {
		t.Errorf("rollback of a.txt: %+v", a)
	}
	if b := res["b.txt"]; b.Action != ctl.ActionRestore {
		t.Errorf("rollback of b.txt: %+v", b)
	}
	w.wantFile("after rollback", "a.txt", "while down\n")
	w.wantFile("after rollback", "b.txt", "b\n")
}

// A path a turn changes in the scan where its older fingerprint leaves
// the window stays tracked: a change made outside the mount afterwards
// is found, and a rollback leaves it alone instead of overwriting it.
// (The scan used to drop such a path as stale, judging by the
// fingerprint it replaced.)
func TestOutsideChangeAfterWindowMoved(t *testing.T) {
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
	w.seed(map[string]string{"f.txt": "0\n"})
	w.mount("--window", "2")
	for _, script := range []string{"echo 1 > f.txt", "echo other > g.txt", "echo 3 > f.txt"} {
		w.cowfs("turn", "begin")
		w.sh(script)
		w.cowfs("turn", "end")
	}
	w.behind("echo outside >> f.txt")
	dry := byPath(w.rollback("3", "--dry-run"))
	if a := dry["f.txt"]; a.Action != ctl.ActionSkip || a.Reason != "changed outside the mount" {
		t.Errorf("dry run for f.txt, changed outside the mount after turn 3: %+v", a)
	}
	w.rollback("3")
	w.wantFile("after the rollback", "f.txt", "3\noutside\n")
}

// waitClockTick waits until a file written now would get an mtime later
// than the one p has, and later than the present as the fine clock
// tells it: the kernel stamps files with a clock that moves in ticks of
// a few milliseconds. probe, a path outside the workspace, is written
// to find out.
func waitClockTick(t *testing.T, p, probe string) {
	t.Helper()
	defer os.Remove(probe)
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	after := max(st.Mtim.Nano(), time.Now().UnixNano())
	for {
		if err := os.WriteFile(probe, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var pst unix.Stat_t
		if err := unix.Stat(probe, &pst); err != nil {
			t.Fatal(err)
		}
		if pst.Mtim.Nano() > after {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
