package rollback

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestRollbackKinds drives a rollback of one turn for each kind of
// change the mount journals, then its unrevert: the rollback must put
// the workspace back exactly as it was when the turn began and report
// what it did per path; the unrevert must put back what the turn made.
func TestRollbackKinds(t *testing.T) {
	cases := []struct {
		name   string
		before func(w *ws) // the workspace before the turn, made directly
		turn   func(w *ws) // the turn's changes, through the "mount"
		report []string
		counts Counts
	}{
		{
			name:   "create file",
			turn:   func(w *ws) { w.create("new", "made by the turn") },
			report: []string{"new delete"},
			counts: Counts{Deleted: 1},
		},
		{
			name:   "create directory",
			turn:   func(w *ws) { w.mkdir("d") },
			report: []string{"d delete"},
			counts: Counts{DirsRemoved: 1},
		},
		{
			name:   "create symlink",
			turn:   func(w *ws) { w.symlink("../elsewhere", "l") },
			report: []string{"l delete"},
			counts: Counts{Deleted: 1},
		},
		{
			name:   "create in subdirectory",
			before: func(w *ws) { w.putDir("sub") },
			turn:   func(w *ws) { w.create("sub/new", "x") },
			report: []string{"sub/new delete"},
			counts: Counts{Deleted: 1},
		},
		{
			name:   "hard link",
			before: func(w *ws) { w.put("a", "shared") },
			turn:   func(w *ws) { w.link("a", "b") },
			report: []string{"b delete"},
			counts: Counts{Deleted: 1},
		},
		{
			name:   "overwrite",
			before: func(w *ws) { w.put("f", "hello world") },
			turn:   func(w *ws) { w.write("f", 0, "HELLO") },
			report: []string{"f restore"},
			counts: Counts{Restored: 1},
		},
		{
			name:   "overwrite past the end",
			before: func(w *ws) { w.put("f", "hello world") },
			turn: func(w *ws) {
				w.write("f", 6, "there, my friend")
				w.write("f", 0, "HELLO")
				w.write("f", 2, "yyyyyyyy") // partly journaled already
			},
			report: []string{"f restore"},
			counts: Counts{Restored: 1},
		},
		{
			name:   "truncate and write",
			before: func(w *ws) { w.put("f", "0123456789") },
			turn: func(w *ws) {
				w.truncate("f", 3)
				w.write("f", 3, "abc")
				w.truncate("f", 0)
			},
			report: []string{"f restore"},
			counts: Counts{Restored: 1},
		},
		{
			name:   "chmod",
			before: func(w *ws) { w.put("f", "x") },
			turn:   func(w *ws) { w.chmod("f", 0o600) },
			report: []string{"f restore"},
			counts: Counts{Restored: 1},
		},
		{
			name:   "xattr set",
			before: func(w *ws) { w.put("f", "x") },
			turn:   func(w *ws) { w.setxattr("f", "user.test", []byte("new")) },
			report: []string{"f restore"},
			counts: Counts{Restored: 1},
		},
		{
			name: "xattr changed and removed",
			before: func(w *ws) {
				w.put("f", "x")
				if err := unix.Lsetxattr(w.abs("f"), "user.test", []byte("old"), 0); err != nil {
					w.t.Fatal(err)
				}
			},
			turn: func(w *ws) {
				w.setxattr("f", "user.test", []byte("changed"))
				w.setxattr("f", "user.test", nil)
			},
			report: []string{"f restore"},
			counts: Counts{Restored: 1},
		},
		{
			name:   "remove file",
			before: func(w *ws) { w.put("f", "precious") },
			turn:   func(w *ws) { w.remove("f") },
			report: []string{"f recover"},
			counts: Counts{Recovered: 1},
		},
		{
			name:   "write then remove",
			before: func(w *ws) { w.put("f", "precious") },
			turn: func(w *ws) {
				w.write("f", 0, "PRE")
				w.truncate("f", 2)
				w.remove("f")
			},
			report: []string{"f recover"},
			counts: Counts{Recovered: 1},
		},
		{
			name:   "remove one of two links",
			before: func(w *ws) { w.put("a", "shared"); linkDirect(w, "a", "b") },
			turn:   func(w *ws) { w.remove("b") },
			report: []string{"b recover"},
			counts: Counts{Recovered: 1},
		},
		{
			name:   "remove directory",
			before: func(w *ws) { w.putDir("d") },
			turn:   func(w *ws) { w.remove("d") },
			report: []string{"d recover"},
			counts: Counts{DirsRecreated: 1},
		},
		{
			name:   "remove a tree",
			before: func(w *ws) { w.put("d/e/x", "x"); w.put("d/y", "y") },
			turn: func(w *ws) {
				w.remove("d/e/x")
				w.remove("d/e")
				w.remove("d/y")
				w.remove("d")
			},
			report: []string{"d recover", "d/e recover", "d/e/x recover", "d/y recover"},
			counts: Counts{Recovered: 2, DirsRecreated: 2},
		},
		{
			name:   "create then remove",
			turn:   func(w *ws) { w.create("tmp", "x"); w.remove("tmp") },
			report: nil,
		},
		{
			name:   "rename",
			before: func(w *ws) { w.put("a", "content") },
			turn:   func(w *ws) { w.rename("a", "b", 0) },
			report: []string{"a recover from b", "b delete to a"},
			counts: Counts{Recovered: 1},
		},
		{
			name:   "rename over a target kept aside",
			before: func(w *ws) { w.put("a", "new version"); w.put("b", "old version") },
			turn:   func(w *ws) { w.rename("a", "b", 0) },
			report: []string{"a recover", "b restore"},
			counts: Counts{Recovered: 1, Restored: 1},
		},
		{
			name:   "rename over an empty directory",
			before: func(w *ws) { w.putDir("a"); w.putDir("b") },
			turn:   func(w *ws) { w.rename("a", "b", 0) },
			report: []string{"a recover", "b restore"},
			counts: Counts{DirsRecreated: 1},
		},
		{
			name:   "rename over a file new in the turn",
			before: func(w *ws) { w.put("a", "content") },
			turn:   func(w *ws) { w.create("b", "new"); w.rename("a", "b", 0) },
			report: []string{"a recover from b", "b delete to a"},
			counts: Counts{Recovered: 1},
		},
		{
			name:   "exchange",
			before: func(w *ws) { w.put("a", "A"); w.put("b", "B") },
			turn:   func(w *ws) { w.rename("a", "b", unix.RENAME_EXCHANGE) },
			report: []string{"a restore", "b restore"},
			counts: Counts{Restored: 2},
		},
		{
			name:   "exchange a file and a directory",
			before: func(w *ws) { w.put("a", "A"); w.put("d/x", "x") },
			turn:   func(w *ws) { w.rename("a", "d", unix.RENAME_EXCHANGE); w.write("a/x", 0, "X") },
			// Reported are the paths records name: d/x comes back with d.
			report: []string{"a restore", "d restore", "a/x delete"},
			counts: Counts{Restored: 1, Deleted: 1},
		},
		{
			name:   "exchange with a file new in the turn, then removed",
			before: func(w *ws) { w.put("a", "A") },
			turn: func(w *ws) {
				w.create("b", "B")
				w.rename("a", "b", unix.RENAME_EXCHANGE)
				w.remove("a")
			},
			report: []string{"a recover from b", "b delete to a"},
			counts: Counts{Recovered: 1},
		},
		{
			name:   "rename a directory, then change inside it",
			before: func(w *ws) { w.put("d/x", "x"); w.put("d/y", "y") },
			turn: func(w *ws) {
				w.rename("d", "e", 0)
				w.write("e/x", 0, "X")
				w.remove("e/y")
				w.create("e/z", "z")
			},
			// d/x and d/y come back with d; e/y is gone already.
			report: []string{"d recover from e", "e delete to d", "e/x delete", "e/z delete"},
			counts: Counts{Recovered: 1, Deleted: 2},
		},
		{
			name: "rename chain",
			before: func(w *ws) {
				w.put("a", "A")
				w.put("b", "B")
			},
			turn: func(w *ws) {
				w.rename("a", "tmp", 0)
				w.rename("b", "a", 0)
				w.rename("tmp", "b", 0)
			},
			report: []string{"a restore", "b restore"},
			counts: Counts{Restored: 2},
		},
		{
			name: "build a tree",
			turn: func(w *ws) {
				w.mkdir("t")
				w.mkdir("t/a")
				w.create("t/a/f", "f")
				w.create("t/g", "g")
				w.symlink("a/f", "t/l")
			},
			report: []string{"t delete", "t/a delete", "t/a/f delete", "t/g delete", "t/l delete"},
			counts: Counts{DirsRemoved: 2, Deleted: 3},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWS(t)
			w.put("untouched", "never changed")
			if c.before != nil {
				c.before(w)
			}
			before := w.snapshot()
			t1 := w.turn(func() { c.turn(w) })
			after := w.snapshot()

			dry, err := Rollback(w.env, t1, false, true)
			if err != nil {
				t.Fatal(err)
			}
			w.same("after a dry run", after)
			out := w.rollback(t1, false)
			w.same("after the rollback", before)
			if !out.Complete || out.Marker == nil || out.Marker.Turn != t1.Num {
				t.Errorf("outcome: complete %v, marker %+v", out.Complete, out.Marker)
			}
			wantReport(t, "rollback", out.Report, c.report...)
			if actions(dry.Report) != actions(out.Report) {
				t.Errorf("the dry run reported\n%s\nthe rollback\n%s", actions(dry.Report), actions(out.Report))
			}
			if out.Counts != c.counts {
				t.Errorf("counts %+v, want %+v", out.Counts, c.counts)
			}

			un := w.unrevert(false)
			w.same("after the unrevert", after)
			if !un.Complete {
				t.Errorf("unrevert incomplete: %+v", un)
			}
			// The workspace can go back again, from scratch.
			w.rollback(w.turnNum(t1.Num), false)
			w.same("after a second rollback", before)
		})
	}
}

// linkDirect makes rel a hard link to existing, directly.
func linkDirect(w *ws, existing, rel string) {
	w.t.Helper()
	if err := unix.Link(w.abs(existing), w.abs(rel)); err != nil {
		w.t.Fatal(err)
	}
}
