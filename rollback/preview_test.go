package rollback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/aside"
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
	lines = append(lines, string(c))
	if !o.Complete {
		lines = append(lines, "stopped: "+o.Failure)
	}
	return strings.Join(lines, "\n")
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
	steps := w.planSteps(to, force)
	// The steps the run skipped that the plan did not: where the two
	// part, the first of them.
	var warnings bytes.Buffer
	saved := w.env.Log
	w.env.Log = slog.New(slog.NewTextHandler(&warnings, nil))
	real := w.rollback(to, force)
	w.env.Log = saved
	if got, want := previewLines(real), previewLines(dry); got != want {
		var recs []string
		w.j.Scan(to.StartSeq, real.Rollback*0+w.j.NextSeq(), false, func(r *journal.Record) error {
			if r.Kind != journal.KindEvent {
				recs = append(recs, fmt.Sprintf("%d turn %d group %d: %v %q %q aside %q ino %d ino2 %d type %o flags %d",
					r.Seq, r.Turn, r.Group, r.Kind, r.Path, r.Path2, r.Aside, r.Ino, r.Ino2, r.Type, r.Flags))
			}
			return nil
		})
		w.t.Errorf("rollback to before turn %d (force %v) did not do what its dry run said:\n%s\ndry run:\n%s\nrun:\n%s\nthe run's log:\n%s\nthe records:\n%s\nthe plan:\n%s",
			to.Num, force, lineDiff(want, got), want, got, warnings.String(), strings.Join(recs, "\n"), steps)
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

// lineDiff lists the lines only the dry run (-) or only the run (+) has.
func lineDiff(dry, run string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	d, r := in(dry), in(run)
	var out []string
	for _, l := range strings.Split(dry, "\n") {
		if !r[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(run, "\n") {
		if !d[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// planSteps renders the plan a rollback to before turn would make now,
// a step a line, as the dry run makes it.
func (w *ws) planSteps(to journal.Turn, force bool) string {
	w.t.Helper()
	recs, err := scanBack(w.j, to.StartSeq, w.j.NextSeq())
	if err != nil {
		w.t.Fatal(err)
	}
	p, err := rollbackPlanner(w.env, to, force)
	if err != nil {
		w.t.Fatal(err)
	}
	defer p.done()
	plan, err := p.plan(recs)
	if err != nil {
		w.t.Fatal(err)
	}
	var lines []string
	var show func(indent string, s *Step)
	show = func(indent string, s *Step) {
		lines = append(lines, fmt.Sprintf("%s%d %s %q %q ino %d ino2 %d aside %q skip %q", indent, s.Seq, s.Op, s.Path, s.Path2, s.Ino, s.Ino2, s.Aside, s.Skip))
		for i := range s.Covers {
			show(indent+"  ", &s.Covers[i])
		}
	}
	plan.eachStep(0, func(_ int, s *Step) error {
		show("", s)
		return nil
	})
	return strings.Join(lines, "\n")
}

// TestPreviewHardLinkNames: the report pairs an object leaving one path
// with its coming back at another (a rename undone: to, from) only when
// it knows which went where. Two names of a hard-linked inode leaving,
// one coming back, were paired by map order: the dry run and the run
// could name different pairs.
func TestPreviewHardLinkNames(t *testing.T) {
	w := newWS(t)
	w.put("f", "linked")
	t1 := w.turn(func() {
		w.link("f", "g")
		w.rename("f", "h", 0)
	})
	out := w.previewThenRun(t1, false)
	wantReport(t, "rollback", out.Report, "f recover", "g delete", "h delete")
}

// TestRollbackRenameIntoMissingDir: a rename undone into a directory
// that is now a file (replaced behind the mount) is skipped, as the dry
// run says; it stopped the rollback, partial, with "fstat g/f: bad
// file descriptor".
func TestRollbackRenameIntoMissingDir(t *testing.T) {
	w := newWS(t)
	w.put("d/f", "in d")
	t1 := w.turn(func() { w.rename("d/f", "g", 0) })
	w.outside("d", func(p string) error {
		// The file made first, so that it cannot take the directory's
		// inode number (and with it, its identity).
		if err := os.WriteFile(p+".new", []byte("a file now"), 0o644); err != nil {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		return os.Rename(p+".new", p)
	})
	out := w.previewThenRun(t1, false)
	if !out.Complete || w.read("g") != "in d" {
		t.Errorf("complete %v (%s); g holds %q", out.Complete, out.Failure, w.read("g"))
	}
	wantReport(t, "rollback", out.Report, "d skip (changed outside the mount)",
		"d/f skip (not as the journal says: changed outside the mount)",
		"g skip (not as the journal says: changed outside the mount)")
}

// TestRollbackRenameWithoutItsTarget: a rename that replaced a target,
// whose kept inode has gone from the aside area, is not undone at all:
// undoing it by halves moved the renamed file back and left its new
// path empty, while the report said both were left as they were.
func TestRollbackRenameWithoutItsTarget(t *testing.T) {
	w := newWS(t)
	w.put("a", "renamed")
	w.put("b", "replaced")
	t1 := w.turn(func() { w.rename("a", "b", 0) })
	for _, name := range w.asideEntries() {
		if err := os.Remove(w.abs(aside.Prefix + name)); err != nil {
			t.Fatal(err)
		}
	}
	out := w.previewThenRun(t1, false)
	if w.exists("a") || !w.exists("b") || w.read("b") != "renamed" {
		t.Errorf("after the rollback: a exists %v, b exists %v", w.exists("a"), w.exists("b"))
	}
	wantReport(t, "rollback", out.Report, "a skip (the kept inode is missing from the aside area)",
		"b skip (the kept inode is missing from the aside area)")
}

// TestPreviewKeepsWhatSkippedStepsLeave: a skipped step leaves its
// object in place, and older records at that place are not undone
// either. Here a file made behind the mount, which even a forced
// rollback cannot take back, stands where a turn made a symlink and
// removed it again: the plan took the symlink's making and removal
// back over the file, found the path free and said the file removed
// before could come back — the run found the path taken.
func TestPreviewKeepsWhatSkippedStepsLeave(t *testing.T) {
	w := newWS(t)
	w.put("a", "before")
	t1 := w.turn(func() { w.remove("a") })
	w.turn(func() {
		w.symlink("target", "a")
		w.remove("a")
	})
	w.outside("a", func(p string) error { return os.WriteFile(p, []byte("behind"), 0o644) })
	out := w.previewThenRun(t1, true)
	if w.read("a") != "behind" {
		t.Errorf("a holds %q", w.read("a"))
	}
	wantReport(t, "forced rollback", out.Report, "a skip (not done: a newer change at the same path could not be undone)")
}

// TestRollbackInodeNumberGivenOutAgain: identities are unique while the
// journal keeps removed inodes aside, but a file removed behind the
// mount frees its inode, and its number may come back as another type.
// A record of the file then names a directory that has its number: the
// step is skipped as not matching — it stopped the rollback, partial,
// with "not a regular file" (or, for attributes, put a file's mode on
// the directory).
func TestRollbackInodeNumberGivenOutAgain(t *testing.T) {
	w := newWS(t)
	w.putDir("d")
	t1 := w.turn(func() {
		// As the mount journals a write to a file that had d's inode
		// number (made by hand: the filesystem decides which number
		// comes back).
		g := w.enter()
		defer g.Leave()
		if err := w.j.Append(g, &journal.Record{Kind: journal.KindData, Path: "d", Type: syscall.S_IFREG, Ino: w.id("d"), Len: 1},
			strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
		w.append(g, &journal.Record{Kind: journal.KindAttr, Cause: journal.CauseMode, Path: "d", Type: syscall.S_IFREG,
			Ino: w.id("d"), Attr: journal.Attr{Mode: syscall.S_IFREG | 0o600, Size: 1}}, nil)
	})
	out := w.previewThenRun(t1, false)
	if !out.Complete {
		t.Errorf("the rollback stopped: %s", out.Failure)
	}
	if mode := w.lstat("d").Mode; mode&0o777 != 0o755 {
		t.Errorf("d's mode is %o", mode)
	}
	wantReport(t, "rollback", out.Report, "d skip (not as the journal says: changed outside the mount)")
}
