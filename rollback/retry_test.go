package rollback

import (
	"fmt"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

// retriedPaths returns the paths a report marks retried.
func retriedPaths(report []PathAction) []string {
	var out []string
	for _, a := range report {
		if a.Retried {
			out = append(out, a.Path)
		}
	}
	return out
}

func wantRetried(t *testing.T, what string, report []PathAction, want ...string) {
	t.Helper()
	got := retriedPaths(report)
	if len(got) != len(want) {
		t.Errorf("%s: retried %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: retried %v, want %v", what, got, want)
		}
	}
}

// TestSkippedAfterFailureRetried (#32): a retried partial rollback
// skipped a file that failed again; the turn began after it keeps its
// change as the turn's, and the next rollback that covers it, the cause
// gone, restores it without force and says it retried it.
func TestSkippedAfterFailureRetried(t *testing.T) {
	w := newWS(t)
	w.put("a", "aaaa")
	w.put("x/f", "xxxx")
	w.put("y/g", "yyyy")
	t1 := w.turn(func() { w.write("a", 0, "A") })
	t2 := w.turn(func() {
		w.write("y/g", 0, "Y")
		w.write("x/f", 0, "X")
	})
	clear := immutable(t, w.abs("x/f"))
	if out := w.rollback(t2, false); out.Complete {
		t.Fatalf("rollback with an immutable file: %+v", out)
	}
	out := w.rollback(t2, false)
	wantReport(t, "retried partial rollback", out.Report, "x/f skip ("+reasonFailed+"reopen x/f: operation not permitted)", "y/g restore")
	clear()
	w.settle()
	w.turn(func() { w.write("a", 1, "B") })

	out = w.rollback(t1, false)
	wantReport(t, "the next rollback covering it", out.Report, "a restore", "x/f restore")
	wantRetried(t, "the next rollback covering it", out.Report, "x/f")
	if got := w.read("x/f"); got != "xxxx" {
		t.Errorf("x/f = %q, want it as before turn 2", got)
	}
}

// conflictCase: turn t0 writes a, turn t1 writes f; then, outside any
// turn, a person overwrites f through the mount; a rollback to before t1
// skips f for that.
func conflictCase(t *testing.T) (w *ws, t0, t1 journal.Turn) {
	w = newWS(t)
	w.put("a", "aaaa")
	w.put("f", "original")
	t0 = w.turn(func() { w.write("a", 0, "A") })
	t1 = w.turn(func() { w.write("f", 0, "AGENT") })
	w.write("f", 0, "person's edit") // no turn open: the person's
	out := w.rollback(t1, false)
	wantReport(t, "rollback with the person's edit", out.Report, "f skip ("+reasonOutside+")")
	return w, t0, t1
}

// undoEdit is the person putting f back as turn t1 left it, through
// the mount, as an editor saving in place does.
func undoEdit(w *ws) {
	w.write("f", 0, "AGENTnal")
	w.truncate("f", 8)
}

// TestSkippedConflictRetriedInStack: the person puts back what they
// changed; the same rollback again, stacked, finds the conflict gone and
// restores f.
func TestSkippedConflictRetriedInStack(t *testing.T) {
	w, _, t1 := conflictCase(t)
	undoEdit(w)
	out := w.rollback(t1, false)
	wantReport(t, "the same rollback again", out.Report, "f restore")
	wantRetried(t, "the same rollback again", out.Report, "f")
	if got := w.read("f"); got != "original" {
		t.Errorf("f = %q, want it as before turn 1", got)
	}
}

// TestSkippedConflictRetriedAfterTurn: the person puts back what they
// changed; a turn begins, which keeps the skipped change of t1; the next
// rollback that covers it restores f, without force.
func TestSkippedConflictRetriedAfterTurn(t *testing.T) {
	w, t0, _ := conflictCase(t)
	undoEdit(w)
	w.settle()
	w.turn(func() { w.write("a", 1, "B") })
	dry, err := Rollback(w.env, t0, false, true)
	if err != nil {
		t.Fatal(err)
	}
	out := w.rollback(t0, false)
	wantReport(t, "the next rollback covering it", out.Report, "a restore", "f restore")
	wantRetried(t, "the next rollback covering it", out.Report, "f")
	if fmt.Sprint(dry.Report) != fmt.Sprint(out.Report) {
		t.Errorf("the dry run said %+v, the rollback did %+v", dry.Report, out.Report)
	}
	if got := w.read("f"); got != "original" {
		t.Errorf("f = %q, want it as before turn 1", got)
	}
}

// TestSkippedConflictKept: while the person's change is in effect —
// untouched, or put back only in part, its mode changed, or the file
// renamed (a change the journal cannot prove undone) — the kept change
// stays skipped, rollback after rollback.
func TestSkippedConflictKept(t *testing.T) {
	for _, c := range []struct {
		name  string
		then  func(w *ws)
		other []string // other paths the report names
	}{
		{"untouched", func(w *ws) {}, nil},
		{"bytes put back, not the size", func(w *ws) { w.write("f", 0, "AGENTnal") }, nil},
		{"put back but for one byte", func(w *ws) {
			w.write("f", 0, "AGENTnaL")
			w.truncate("f", 8)
		}, nil},
		{"put back but for the mode", func(w *ws) {
			undoEdit(w)
			w.chmod("f", 0o600)
		}, nil},
		{"put back, but renamed away and back", func(w *ws) {
			undoEdit(w)
			w.rename("f", "g", 0)
			w.rename("g", "f", 0)
		}, []string{"g skip (" + reasonOutside + ")"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, t0, _ := conflictCase(t)
			c.then(w)
			want := w.read("f")
			w.settle()
			w.turn(func() { w.write("a", 1, "B") })
			out := w.rollback(t0, false)
			wantReport(t, "the next rollback covering it", out.Report,
				append([]string{"a restore", "f skip (" + reasonOutside + ")"}, c.other...)...)
			wantRetried(t, "the next rollback covering it", out.Report)
			if got := w.read("f"); got != want {
				t.Errorf("f = %q, want the person's %q", got, want)
			}
		})
	}
}
