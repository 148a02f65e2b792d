package rollback

import (
	"os"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

// TestRollbackConflicts: a change made outside any turn (through the
// mount while no turn is open: Turn 0 records) or outside the mount (a
// KindOutside record from package rescan) after the target turn began
// is work no rolled-back turn did. Without force a rollback leaves what
// it touched as it is and says why, per path, and undoes the rest; with
// force it undoes the turns' changes anyway.
func TestRollbackConflicts(t *testing.T) {
	const (
		outsideTurn  = reasonOutside
		outsideMount = reasonOutsideMount
	)
	cases := []struct {
		name    string
		before  func(w *ws)
		turn    func(w *ws)
		outside func(w *ws) // after the turn
		report  []string
		counts  Counts
		check   func(w *ws) // the workspace after the rollback without force
	}{
		{
			name:    "file written between turns",
			before:  func(w *ws) { w.put("f", "original") },
			turn:    func(w *ws) { w.write("f", 0, "TURN"); w.create("g", "g") },
			outside: func(w *ws) { w.write("f", 0, "USER") },
			report:  []string{"f skip (" + outsideTurn + ")", "g delete"},
			counts:  Counts{Skipped: 1, Deleted: 1},
			check: func(w *ws) {
				if got := w.read("f"); got != "USERinal" {
					t.Errorf("f = %q, want the user's version kept", got)
				}
			},
		},
		{
			name:    "file created by the turn, edited between turns",
			turn:    func(w *ws) { w.create("n", "turn") },
			outside: func(w *ws) { w.write("n", 0, "USER") },
			report:  []string{"n skip (" + outsideTurn + ")"},
			counts:  Counts{Skipped: 1},
			check: func(w *ws) {
				if got := w.read("n"); got != "USER" {
					t.Errorf("n = %q, want the user's version kept", got)
				}
			},
		},
		{
			name:    "file added between turns to a directory the turn made",
			turn:    func(w *ws) { w.mkdir("d"); w.create("d/turn", "t") },
			outside: func(w *ws) { w.create("d/user", "u") },
			report:  []string{"d skip (" + reasonNotEmpty + ")", "d/turn delete", "d/user skip (" + outsideTurn + ")"},
			counts:  Counts{Skipped: 2, Deleted: 1},
			check: func(w *ws) {
				if !w.exists("d/user") || w.exists("d/turn") {
					t.Errorf("want d/user kept and d/turn gone")
				}
			},
		},
		{
			name:    "file renamed between turns",
			turn:    func(w *ws) { w.create("a", "turn") },
			outside: func(w *ws) { w.rename("a", "b", 0) },
			report:  []string{"a skip (" + outsideTurn + ")", "b skip (" + outsideTurn + ")"},
			counts:  Counts{Skipped: 2},
			check: func(w *ws) {
				if !w.exists("b") {
					t.Errorf("want b kept")
				}
			},
		},
		{
			name:   "file edited outside the mount",
			before: func(w *ws) { w.put("f", "original"); w.put("g", "g") },
			turn:   func(w *ws) { w.write("f", 0, "TURN"); w.write("g", 0, "G") },
			outside: func(w *ws) {
				w.outside("f", func(p string) error { return os.WriteFile(p, []byte("edited by hand"), 0o644) })
			},
			report: []string{"f skip (" + outsideMount + ")", "g restore"},
			counts: Counts{Skipped: 1, Restored: 1},
			check: func(w *ws) {
				if got := w.read("f"); got != "edited by hand" {
					t.Errorf("f = %q, want the hand edit kept", got)
				}
				if got := w.read("g"); got != "g" {
					t.Errorf("g = %q, want it restored", got)
				}
			},
		},
		{
			name:   "file the turn made, deleted outside the mount",
			before: func(w *ws) { w.put("keep", "k") },
			turn:   func(w *ws) { w.create("n", "turn"); w.write("keep", 0, "K") },
			outside: func(w *ws) {
				w.outside("n", os.Remove)
			},
			report: []string{"keep restore", "n skip (" + outsideMount + ")"},
			counts: Counts{Skipped: 1, Restored: 1},
		},
		{
			name:   "file the turn removed, recreated outside the mount",
			before: func(w *ws) { w.put("f", "original") },
			turn:   func(w *ws) { w.remove("f") },
			outside: func(w *ws) {
				w.outside("f", func(p string) error { return os.WriteFile(p, []byte("recreated"), 0o644) })
			},
			report: []string{"f skip (" + outsideMount + ")"},
			counts: Counts{Skipped: 1},
			check: func(w *ws) {
				if got := w.read("f"); got != "recreated" {
					t.Errorf("f = %q, want the new file kept", got)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Without force.
			w := newWS(t)
			if c.before != nil {
				c.before(w)
			}
			t1 := w.turn(func() { c.turn(w) })
			c.outside(w)
			kept := w.snapshot()
			out := w.rollback(t1, false)
			wantReport(t, "rollback", out.Report, c.report...)
			if out.Counts != c.counts {
				t.Errorf("counts %+v, want %+v", out.Counts, c.counts)
			}
			if !out.Complete {
				t.Errorf("a rollback with conflicts is complete: it did all it may; got %+v", out)
			}
			if c.check != nil {
				c.check(w)
			}
			w.unrevert(false)
			w.same("after the unrevert", kept)
		})
	}
}

// TestRollbackForce: with force, changes made through the mount
// outside turns since the target turn began (journaled, with their
// pre-images) are undone too: the workspace is as the turn found it.
func TestRollbackForce(t *testing.T) {
	w := newWS(t)
	w.put("f", "original")
	before := w.snapshot()
	t1 := w.turn(func() { w.write("f", 0, "TURN"); w.create("n", "new") })
	w.write("f", 0, "USER")
	w.create("between", "made between turns")
	out := w.rollback(t1, true)
	if got := w.read("f"); got != "original" {
		t.Errorf("f = %q after a forced rollback, want the original", got)
	}
	if w.exists("between") || w.exists("n") {
		t.Errorf("a forced rollback undoes what was made between turns too")
	}
	w.same("after a forced rollback", before)
	if out.Counts.Skipped != 0 {
		t.Errorf("forced: %+v", out.Counts)
	}
}

// TestRollbackOnlyItsTurns: a rollback to before turn 2 leaves turn 1's
// changes alone, and the journal records which turns it reverted.
func TestRollbackOnlyItsTurns(t *testing.T) {
	w := newWS(t)
	w.put("f", "0")
	w.turn(func() { w.write("f", 0, "1"); w.create("one", "1") })
	mid := w.snapshot()
	t2 := w.turn(func() { w.write("f", 0, "2"); w.create("two", "2") })
	w.turn(func() { w.write("f", 0, "3"); w.remove("one") })
	out := w.rollback(t2, false)
	w.same("rolled back to before turn 2", mid)
	rbs, err := w.j.Rollbacks()
	if err != nil {
		t.Fatal(err)
	}
	if len(rbs) != 1 || rbs[0].ID != out.Rollback || rbs[0].State != journal.RollbackDone ||
		len(rbs[0].Reverted) != 2 || rbs[0].Reverted[0] != 2 || rbs[0].Reverted[1] != 3 {
		t.Errorf("rollbacks: %+v", rbs)
	}
	if _, err := Rollback(w.env, t2, false, false); err != nil {
		t.Errorf("rolling back to the same turn again: %v", err)
	}
	w.same("rolled back twice to before turn 2", mid)
}

// TestRollbackRefusedInTurn: no rollback while a turn is open.
func TestRollbackRefusedInTurn(t *testing.T) {
	w := newWS(t)
	t1 := w.turn(func() { w.create("a", "a") })
	w.begin()
	if _, err := Rollback(w.env, t1, false, false); !errorsIs(err, journal.ErrBusy) {
		t.Errorf("rollback in an open turn: %v, want ErrBusy", err)
	}
	w.end()
	if _, err := Unrevert(w.env, false); !errorsIs(err, ErrNothingToUnrevert) {
		t.Errorf("unrevert with no rollback: %v, want ErrNothingToUnrevert", err)
	}
}
