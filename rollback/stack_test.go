package rollback

import (
	"fmt"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

// TestStackedUndosCostWhatTheyRestore: ten turns each rewrite the same
// files, some in place and some as sed -i does (a new file renamed over
// the old); then "undo" ten times, each a rollback to before the latest
// turn not yet reverted. Each undo restores the same number of files,
// and must journal about what the first did, not the undo of every
// rollback stacked below it again (which doubled with each). The
// workspace is exact after each, and unrevert walks the stack back up.
func TestStackedUndosCostWhatTheyRestore(t *testing.T) {
	const turns, files = 10, 10
	w := newWS(t)
	name := func(i int) string { return fmt.Sprintf("f%02d", i) }
	for i := 0; i < files; i++ {
		w.put(name(i), "original\n")
	}
	var states []string
	var ts []journal.Turn
	for k := 0; k < turns; k++ {
		states = append(states, w.snapshot())
		ts = append(ts, w.turn(func() {
			for i := 0; i < files; i++ {
				if i%2 == 0 {
					w.write(name(i), 0, fmt.Sprintf("turn %d\n", k))
					continue
				}
				tmp := name(i) + ".sed"
				w.create(tmp, fmt.Sprintf("turn %d\n", k))
				w.rename(tmp, name(i), 0)
			}
		}))
	}
	live := w.snapshot()
	var grew []uint64
	for k := turns - 1; k >= 0; k-- {
		from := w.j.NextSeq()
		out := w.rollback(ts[k], false)
		if !out.Complete || out.Counts.Skipped != 0 {
			t.Fatalf("undo to before turn %d: %+v", k+1, out)
		}
		grew = append(grew, w.j.NextSeq()-from)
		w.same(fmt.Sprintf("after undoing to before turn %d", k+1), states[k])
	}
	t.Logf("records per undo: %v", grew)
	for i, n := range grew {
		if n > 2*grew[0]+8 {
			t.Errorf("undo %d journaled %d records, the first %d: records per undo %v", i+1, n, grew[0], grew)
			break
		}
	}
	for k := 1; k < turns; k++ {
		w.unrevert(false)
		w.same(fmt.Sprintf("after %d unreverts", k), states[k])
	}
	w.unrevert(false)
	w.same("after unreverting every undo", live)
}

// TestStackedUndosWithConflicts: the same, but in every turn a person
// edits a file the agent edits too. Each undo skips the agent's change
// to it (a conflict), and the next retries it among what the stack
// settled: still about what the first undo cost, and the person's file
// is never touched.
func TestStackedUndosWithConflicts(t *testing.T) {
	const turns, files = 10, 10
	w := newWS(t)
	name := func(i int) string { return fmt.Sprintf("f%02d", i) }
	for i := 0; i < files; i++ {
		w.put(name(i), "original\n")
	}
	w.put("shared", "original\n")
	var ts []journal.Turn
	for k := 0; k < turns; k++ {
		ts = append(ts, w.turn(func() {
			w.write("shared", 0, fmt.Sprintf("agent %02d\n", k))
			w.asPerson(func() { w.write("shared", 0, fmt.Sprintf("person%02d\n", k)) })
			for i := 0; i < files; i++ {
				w.write(name(i), 0, fmt.Sprintf("turn %03d\n", k))
			}
		}))
	}
	var grew []uint64
	for k := turns - 1; k >= 0; k-- {
		from := w.j.NextSeq()
		out := w.rollback(ts[k], false)
		if !out.Complete || out.Counts.Skipped != 1 || out.Counts.Restored != files {
			t.Fatalf("undo to before turn %d: %+v", k+1, out.Counts)
		}
		grew = append(grew, w.j.NextSeq()-from)
		for i := 0; i < files; i++ {
			want := "original\n"
			if k > 0 {
				want = fmt.Sprintf("turn %03d\n", k-1)
			}
			if got := w.read(name(i)); got != want {
				t.Fatalf("after undoing to before turn %d: %s = %q, want %q", k+1, name(i), got, want)
			}
		}
		if got := w.read("shared"); got != fmt.Sprintf("person%02d\n", turns-1) {
			t.Fatalf("the person's file after undoing to before turn %d: %q", k+1, got)
		}
	}
	t.Logf("records per undo: %v", grew)
	for i, n := range grew {
		if n > 2*grew[0]+8 {
			t.Errorf("undo %d journaled %d records, the first %d: records per undo %v", i+1, n, grew[0], grew)
			break
		}
	}
}
