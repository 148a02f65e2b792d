package rollback

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

// previewLines renders what a rollback's outcome says it does, as the
// JSON report has it: a line per path (path, action, reason, from, to,
// type), sorted, then the counts.
func previewLines(o *Outcome) string {
	var lines []string
	for _, a := range o.Report {
		b, _ := json.Marshal(a)
		lines = append(lines, string(b))
	}
	sort.Strings(lines)
	c, _ := json.Marshal(o.Counts)
	return strings.Join(append(lines, string(c)), "\n")
}

// previewThenRun rolls back to before turn, first dry and then for
// real, and fails t unless both say the same: the preview is the
// rollback.
func (w *ws) previewThenRun(to journal.Turn, force bool) *Outcome {
	w.t.Helper()
	dry, err := Rollback(w.env, to, force, true)
	if err != nil {
		w.t.Fatalf("dry run to before turn %d: %v", to.Num, err)
	}
	real := w.rollback(to, force)
	if got, want := previewLines(real), previewLines(dry); got != want {
		w.t.Errorf("rollback to before turn %d (force %v) did not do what its dry run said:\ndry run:\n%s\nrun:\n%s", to.Num, force, want, got)
	}
	return real
}

// TestPreviewDirsHoldingOutsideFiles (#32, case 6): a directory a turn
// made, holding files made outside a turn, stays (the files are not the
// turn's to take back, so it is not empty) — and the dry run says so.
// It said "1 empty directory removed, 2 skipped" where the real run did
// 0 and 3.
func TestPreviewDirsHoldingOutsideFiles(t *testing.T) {
	for _, c := range []struct {
		name        string
		outside     func(w *ws)
		dirsRemoved int // d/e, unless it holds a file too
	}{
		{"through the mount", func(w *ws) { w.create("d/x", "x"); w.create("d/y", "y") }, 1},
		{"behind the mount", func(w *ws) {
			w.outside("d/x", func(p string) error { return writeFile(p, "x") })
			w.outside("d/y", func(p string) error { return writeFile(p, "y") })
		}, 1},
		{"nested", func(w *ws) { w.create("d/e/x", "x") }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWS(t)
			t1 := w.turn(func() {
				w.mkdir("d")
				w.mkdir("d/e")
				w.create("d/e/mine", "the turn's")
			})
			c.outside(w)
			out := w.previewThenRun(t1, false)
			if !w.exists("d") || w.exists("d/e/mine") {
				t.Errorf("after the rollback: d exists %v, d/e/mine exists %v", w.exists("d"), w.exists("d/e/mine"))
			}
			if out.Counts.DirsRemoved != c.dirsRemoved || out.Counts.Skipped != 3 {
				t.Errorf("counts %+v, want %d directories removed, 3 paths skipped", out.Counts, c.dirsRemoved)
			}
		})
	}
}

func writeFile(p, content string) error { return os.WriteFile(p, []byte(content), 0o644) }
