package e2e

import (
	"os"
	"reflect"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// history is what a user sees of the journal's idea of history: each
// turn's state, and the turns markers stand for.
type history struct {
	states  map[uint64]string
	markers []uint64
}

func (w *workspace) history() history {
	w.t.Helper()
	var tl ctl.TurnList
	w.cowfsJSON(&tl, "log")
	h := history{states: map[uint64]string{}}
	for _, t := range tl.Turns {
		h.states[t.Num] = t.State
	}
	var ml ctl.MarkerList
	w.cowfsJSON(&ml, "markers")
	for _, m := range ml.Markers {
		h.markers = append(h.markers, m.Turn)
	}
	return h
}

// wantHistory fails the test unless turn states and markers are as
// given.
func (w *workspace) wantHistory(what string, states map[uint64]string, markers ...uint64) {
	w.t.Helper()
	h := w.history()
	if !reflect.DeepEqual(h.states, states) || !reflect.DeepEqual(h.markers, markers) {
		w.t.Errorf("%s: turns %v, markers %v; want turns %v, markers %v", what, h.states, h.markers, states, markers)
	}
}

// wantFile fails the test unless the file at rel holds content ("" for
// absent).
func (w *workspace) wantFile(what, rel, content string) {
	w.t.Helper()
	b, err := os.ReadFile(w.path(rel))
	switch {
	case content == "" && err == nil:
		w.t.Errorf("%s: %s exists (%q), want it absent", what, rel, b)
	case content != "" && string(b) != content:
		w.t.Errorf("%s: %s is %q (%v), want %q", what, rel, b, err, content)
	}
}

// turns runs n turns; turn i writes i to f and creates ti.
func (w *workspace) numberedTurns(n int) {
	w.t.Helper()
	for i := 1; i <= n; i++ {
		w.cowfs("turn", "begin", "--anchor", "m"+itoa(i))
		w.sh("echo " + itoa(i) + " > f; echo x > t" + itoa(i))
		w.cowfs("turn", "end")
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

const (
	closed   = ctl.StateClosed
	reverted = ctl.StateReverted
)

// Reproduction 1 of #10: undo, undo, redo leaves turn 3 reverted (with
// its marker) and the next undo undoes turn 2, not turn 3 again.
func TestUndoUndoRedo(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "0\n"})
	w.mount()
	w.numberedTurns(3)

	w.cowfs("undo")
	w.cowfs("undo")
	w.wantHistory("after undo, undo", map[uint64]string{1: closed, 2: reverted, 3: reverted}, 2, 3)
	w.cowfs("redo")
	w.wantFile("after undo, undo, redo", "f", "2\n")
	w.wantFile("after undo, undo, redo", "t2", "x\n")
	w.wantFile("after undo, undo, redo", "t3", "")
	w.wantHistory("after undo, undo, redo", map[uint64]string{1: closed, 2: closed, 3: reverted}, 3)

	w.cowfs("undo")
	w.wantFile("after the next undo", "f", "1\n")
	w.wantFile("after the next undo", "t2", "")
	w.wantHistory("after the next undo", map[uint64]string{1: closed, 2: reverted, 3: reverted}, 2, 3)
}

// Reproduction 2 of #10: rollback B, rollback A, rollback B puts the
// workspace before B — A's changes back — and turns and markers say so:
// A is live, its marker withdrawn; the next turn keeps A, which can
// still be rolled back.
func TestRollbackLaterAfterEarlier(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "0\n"})
	w.mount()
	w.numberedTurns(3)

	w.rollback("2")
	w.rollback("1")
	w.wantFile("after rollback 2, 1", "f", "0\n")
	w.wantHistory("after rollback 2, 1", map[uint64]string{1: reverted, 2: reverted, 3: reverted}, 1, 2)
	w.rollback("2")
	w.wantFile("after rollback 2, 1, 2", "f", "1\n")
	w.wantFile("after rollback 2, 1, 2", "t1", "x\n")
	w.wantFile("after rollback 2, 1, 2", "t2", "")
	w.wantHistory("after rollback 2, 1, 2", map[uint64]string{1: closed, 2: reverted, 3: reverted}, 2)

	// Unrevert steps back down the stack: before A again.
	w.cowfs("unrevert")
	w.wantFile("after unrevert", "f", "0\n")
	w.wantHistory("after unrevert", map[uint64]string{1: reverted, 2: reverted, 3: reverted}, 1, 2)
	w.cowfs("redo") // the rollback below: back to before B
	w.wantFile("after unrevert, unrevert", "f", "1\n")
	w.wantHistory("after unrevert, unrevert", map[uint64]string{1: closed, 2: reverted, 3: reverted}, 2)
	w.cowfs("redo") // the first rollback: everything back
	w.wantFile("after three unreverts", "f", "3\n")
	w.wantHistory("after three unreverts", map[uint64]string{1: closed, 2: closed, 3: closed})
	if _, _, code := w.run("redo"); code != 7 {
		t.Errorf("a fourth unrevert: exit %d, want 7 (nothing to unrevert)", code)
	}

	w.rollback("2")
	w.rollback("1")
	w.rollback("2")
	w.cowfs("turn", "begin")
	w.sh("echo 4 > f")
	w.cowfs("turn", "end")
	w.wantHistory("after the next turn", map[uint64]string{1: closed, 4: closed}, 2)
	w.rollback("1")
	w.wantFile("rolled back to before A", "f", "0\n")
	w.wantFile("rolled back to before A", "t1", "")
}
