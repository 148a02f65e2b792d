package e2e

import "testing"

// #32, case 2: with --mountpoint, turns g1, g2 (creates H), g3 (edits
// H); rollback g3; a write to H behind the mount; rollback g1. H stays
// watched after the first rollback: the write is a change outside the
// mount, which the second rollback keeps and reports.
func TestWatchedAfterRollback(t *testing.T) {
	w := outsideWorkspace(t, map[string]string{"f": "0\n"})
	for i, script := range []string{"echo 1 > f", "echo made by g2 > H", "echo edited by g3 > H"} {
		w.cowfs("turn", "begin", "--id", "g"+itoa(i+1))
		w.sh(script)
		w.cowfs("turn", "end")
	}
	w.rollback("g3")
	w.behind("echo written behind the mount > H")

	res := w.rollback("g1")
	if a := byPath(res)["H"]; a.Action != "skip" || a.Reason != "changed outside the mount" {
		t.Errorf("rollback g1: H: %+v, want it skipped as changed outside the mount", a)
	}
	w.wantFile("after rollback g1", "H", "written behind the mount\n")
	w.wantFile("after rollback g1", "f", "0\n")
}

// The same after an unrevert: turns g1 (creates H), g2 (edits H);
// rollback g2; unrevert; a write to H behind the mount; rollback g1.
func TestWatchedAfterUnrevert(t *testing.T) {
	w := outsideWorkspace(t, nil)
	for i, script := range []string{"echo made by g1 > H", "echo edited by g2 > H"} {
		w.cowfs("turn", "begin", "--id", "g"+itoa(i+1))
		w.sh(script)
		w.cowfs("turn", "end")
	}
	w.rollback("g2")
	w.cowfs("unrevert")
	w.behind("echo written behind the mount > H")

	res := w.rollback("g1")
	if a := byPath(res)["H"]; a.Action != "skip" || a.Reason != "changed outside the mount" {
		t.Errorf("rollback g1: H: %+v, want it skipped as changed outside the mount", a)
	}
	w.wantFile("after rollback g1", "H", "written behind the mount\n")
}

// A write through the mount is never taken for a change outside it, also
// when a scan came between it and an earlier write to the same file in
// the same epoch (a rollback's dry run scans before it plans): the first
// write journaled the file's pre-image, the second journals nothing, and
// the mount's stamp of the file explains it.
func TestNoOutsideAfterMidEpochScan(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "0\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo 1 > g")
	w.cowfs("turn", "end")
	w.sh("echo edited > f") // no turn open
	w.rollbackDry("1")
	w.sh("echo edited again > f")
	w.cowfs("turn", "begin")
	w.cowfs("turn", "end")
	if ev := w.outsideEvents(); len(ev) != 0 {
		t.Errorf("changes through the mount reported as outside it: %+v", ev)
	}
}
