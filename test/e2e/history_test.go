package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
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
	w.wantHistory("after undo, undo", map[uint64]string{1: closed, 2: reverted, 3: reverted}, 2)
	w.cowfs("redo")
	w.wantFile("after undo, undo, redo", "f", "2\n")
	w.wantFile("after undo, undo, redo", "t2", "x\n")
	w.wantFile("after undo, undo, redo", "t3", "")
	w.wantHistory("after undo, undo, redo", map[uint64]string{1: closed, 2: closed, 3: reverted}, 3)

	w.cowfs("undo")
	w.wantFile("after the next undo", "f", "1\n")
	w.wantFile("after the next undo", "t2", "")
	w.wantHistory("after the next undo", map[uint64]string{1: closed, 2: reverted, 3: reverted}, 2)
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
	w.wantHistory("after rollback 2, 1", map[uint64]string{1: reverted, 2: reverted, 3: reverted}, 1)
	w.rollback("2")
	w.wantFile("after rollback 2, 1, 2", "f", "1\n")
	w.wantFile("after rollback 2, 1, 2", "t1", "x\n")
	w.wantFile("after rollback 2, 1, 2", "t2", "")
	w.wantHistory("after rollback 2, 1, 2", map[uint64]string{1: closed, 2: reverted, 3: reverted}, 2)

	// Unrevert steps back down the stack: before A again.
	w.cowfs("unrevert")
	w.wantFile("after unrevert", "f", "0\n")
	w.wantHistory("after unrevert", map[uint64]string{1: reverted, 2: reverted, 3: reverted}, 1)
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

// showStep returns the changes of one step of turn n.
func (w *workspace) showStep(n, step string) map[string]string {
	w.t.Helper()
	var d ctl.TurnDetail
	w.cowfsJSON(&d, "show", n, "--step", step)
	m := map[string]string{}
	for _, c := range d.Changes {
		m[string(c.Path)] = c.Kind
	}
	return m
}

// diffStep returns one step's diff, path by path.
func (w *workspace) diffStep(n, step string) map[string]ctl.DiffFile {
	w.t.Helper()
	var d ctl.Diff
	w.cowfsJSON(&d, "diff", n, "--step", step)
	m := map[string]ctl.DiffFile{}
	for _, f := range d.Files {
		m[string(f.Path)] = f
	}
	return m
}

// Reproduction 3 of #10: each step's changes, events and diff are what
// that step changed, even when an earlier step of the turn changed the
// same file.
func TestStepCapture(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "a0\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.cowfs("turn", "step", "s1")
	w.sh("echo a1 >> f; printf 'x\\ny\\n' > new.txt")
	w.cowfs("turn", "step", "s2")
	w.sh("echo a2 >> f; sed -i s/x/X/ new.txt")
	w.cowfs("turn", "end")

	if got := w.showStep("1", "s1"); got["f"] != "modified" || got["new.txt"] != "created" || len(got) != 2 {
		t.Errorf("show --step s1: %v", got)
	}
	if got := w.showStep("1", "s2"); got["f"] != "modified" || got["new.txt"] != "modified" || len(got) != 2 {
		t.Errorf("show --step s2: %v", got)
	}
	d1 := w.diffStep("1", "s1")
	if f := d1["f"]; f.Added != 1 || f.Removed != 0 || !strings.Contains(f.Diff, "+a1") || strings.Contains(f.Diff, "a2") {
		t.Errorf("diff --step s1 of f: %+v", f)
	}
	if f := d1["new.txt"]; f.Status != "created" || !strings.Contains(f.Diff, "+x") {
		t.Errorf("diff --step s1 of new.txt: %+v", f)
	}
	d2 := w.diffStep("1", "s2")
	if f := d2["f"]; f.Added != 1 || !strings.Contains(f.Diff, "+a2") || strings.Contains(f.Diff, "+a1") {
		t.Errorf("diff --step s2 of f: %+v", f)
	}
	if f := d2["new.txt"]; f.Status != "modified" || !strings.Contains(f.Diff, "-x") || !strings.Contains(f.Diff, "+X") {
		t.Errorf("diff --step s2 of new.txt: %+v", f)
	}
	// Events carry the step that made them.
	steps := map[string]map[string]bool{}
	dec := json.NewDecoder(strings.NewReader(w.cowfs("events", "--json")))
	for dec.More() {
		var e ctl.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("events --json: %v", err)
		}
		if e.Type == ctl.EventChange {
			if steps[e.Step] == nil {
				steps[e.Step] = map[string]bool{}
			}
			steps[e.Step][string(e.Path)] = true
		}
	}
	if !steps["s1"]["f"] || !steps["s2"]["f"] || !steps["s2"]["new.txt"] {
		t.Errorf("change events by step: %v", steps)
	}
	// And the turn still rolls back exactly.
	w.rollback("1")
	w.wantFile("after rollback", "f", "a0\n")
	w.wantFile("after rollback", "new.txt", "")
}

// Reproduction 5 of #10: reports tell the truth.
func TestRollbackReportsTruth(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"dir/a": "a\n", "dir/sub/b": "b\n", "keep/k": "k\n"})
	w.mount("--window", "3")
	w.cowfs("turn", "begin", "--id", "first")
	// Made and gone inside the turn; a directory moved; a file created
	// in a kept directory.
	w.sh("echo t > tmp.txt; rm tmp.txt; mkdir -p scratch/x; echo s > scratch/x/s; rm -rf scratch; mv dir moved; echo n > keep/new")
	w.cowfs("turn", "end")

	res := w.rollbackDry("1")
	byPath := map[string]ctl.PathAction{}
	for _, p := range res.Paths {
		byPath[string(p.Path)] = p
	}
	for _, gone := range []string{"tmp.txt", "scratch", "scratch/x", "scratch/x/s"} {
		if p, ok := byPath[gone]; ok {
			t.Errorf("%s, made and removed inside the turn, is reported: %+v", gone, p)
		}
	}
	if p := byPath["dir"]; p.Action != ctl.ActionRecover || p.From != "moved" {
		t.Errorf("the moved directory comes back as %+v, want recover from moved", p)
	}
	if p := byPath["moved"]; p.Action != ctl.ActionDelete || p.To != "dir" {
		t.Errorf("its new name goes as %+v, want delete to dir", p)
	}
	for _, inside := range []string{"moved/a", "moved/sub", "moved/sub/b", "dir/a", "dir/sub"} {
		if p, ok := byPath[inside]; ok {
			t.Errorf("%s, inside the moved directory, is reported on its own: %+v", inside, p)
		}
	}
	if res.Counts.Skipped != 0 || res.Counts.Recovered != 1 || res.Counts.Deleted != 1 {
		t.Errorf("counts %+v, want one recovered (the move), one deleted (keep/new), none skipped: %+v", res.Counts, res.Paths)
	}

	// A turn id that left the window is out_of_window, like its number.
	for i := 0; i < 4; i++ {
		w.cowfs("turn", "begin")
		w.cowfs("turn", "end")
	}
	for _, ref := range []string{"1", "first"} {
		if _, errOut, code := w.run("rollback", ref); code != 6 || !strings.Contains(errOut, "can be reached") {
			t.Errorf("rollback %s, out of the window: exit %d: %s", ref, code, errOut)
		}
	}
	// The open turn: busy.
	w.cowfs("turn", "begin", "--id", "open")
	for _, ref := range []string{"6", "open"} {
		if _, errOut, code := w.run("rollback", ref); code != 4 {
			t.Errorf("rollback to the open turn %s: exit %d: %s", ref, code, errOut)
		}
	}
}

func (w *workspace) rollbackDry(turn string) ctl.RollbackResult {
	w.t.Helper()
	return w.rollback(turn, "--dry-run")
}

// Ten turns each sed -i the same 50 files; then cowfs undo ten times:
// each undo restores 50 files and adds to the journal about what the
// first did. (Each used to journal the undo of every rollback stacked
// below it again: the journal grew 368 KiB to 40 MiB over the ten.)
// The files are exact after each undo, and redo walks back up.
func TestTenUndosInARow(t *testing.T) {
	w := newWorkspace(t)
	files := map[string]string{}
	for i := 0; i < 50; i++ {
		files[fmt.Sprintf("f%02d.txt", i)] = "alpha\nbeta\ngamma\n"
	}
	w.seed(files)
	w.mount()
	var before []tree
	for k := 0; k < 10; k++ {
		before = append(before, snapshot(t, w.mnt))
		w.cowfs("turn", "begin")
		w.sh(fmt.Sprintf("sed -i 's/beta.*/beta %d/' f*.txt", k))
		w.cowfs("turn", "end")
	}
	live := snapshot(t, w.mnt)
	var grew []int64
	for k := 9; k >= 0; k-- {
		j0 := w.status().JournalBytes
		w.cowfs("undo")
		grew = append(grew, w.status().JournalBytes-j0)
		sameTree(t, w.mnt, before[k], fmt.Sprintf("after undoing to before turn %d", k+1))
	}
	if last := grew[len(grew)-1]; last > 4<<20 && last > 8*grew[0] {
		t.Errorf("the journal grew by %v bytes per undo: the tenth costs far more than the first", grew)
	}
	for k := 1; k <= 10; k++ {
		w.cowfs("redo")
	}
	sameTree(t, w.mnt, live, "after ten redos")
}
