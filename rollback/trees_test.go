package rollback

import (
	"fmt"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

// groupRemoves returns how many entries rollback id moved aside: its
// KindRemove records.
func (w *ws) groupRemoves(id uint64) int {
	w.t.Helper()
	n := 0
	err := w.j.Scan(0, 0, false, func(r *journal.Record) error {
		if r.Group == id && r.Kind == journal.KindRemove {
			n++
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return n
}

// TestRollbackTreeInOneRename: a tree the turn created goes aside
// whole, in one rename and one record, however many entries it holds;
// unrevert brings it back the same way.
func TestRollbackTreeInOneRename(t *testing.T) {
	w := newWS(t)
	w.put("old", "old")
	before := w.snapshot()
	t1 := w.turn(func() {
		w.mkdir("node_modules")
		for i := range 5 {
			d := fmt.Sprintf("node_modules/p%d", i)
			w.mkdir(d)
			w.mkdir(d + "/lib")
			for k := range 4 {
				w.create(fmt.Sprintf("%s/lib/f%d.js", d, k), "module.exports = 1")
			}
			w.symlink("lib/f0.js", d+"/index.js")
		}
		w.write("old", 0, "OLD") // outside the tree: undone by itself
	})
	after := w.snapshot()
	out := w.rollback(t1, false)
	w.same("after the rollback", before)
	if n := w.groupRemoves(out.Rollback); n != 1 {
		t.Errorf("the rollback moved %d entries aside, want 1 (the tree)", n)
	}
	if got := w.asideEntries(); len(got) != 1 {
		t.Errorf("aside area holds %v, want one tree", got)
	}
	if out.Counts.DirsRemoved != 11 || out.Counts.Deleted != 25 || out.Counts.Restored != 1 {
		t.Errorf("counts %+v, want 11 directories and 25 files deleted, 1 restored", out.Counts)
	}
	w.unrevert(false)
	w.same("after the unrevert", after)
	if got := w.asideEntries(); len(got) != 0 {
		t.Errorf("aside area holds %v after the unrevert, want nothing", got)
	}
}

// TestRollbackTreeGitLike: a tree made as git makes its repository —
// objects written to a temporary name, linked to their own and the
// temporary name removed, the index replaced by a rename over it — also
// goes aside whole: a rename within the tree that replaced a file new in
// the turn brings nothing back.
func TestRollbackTreeGitLike(t *testing.T) {
	w := newWS(t)
	w.put("old", "old")
	before := w.snapshot()
	t1 := w.turn(func() {
		w.mkdir("repo")
		w.mkdir("repo/.git")
		w.mkdir("repo/.git/objects")
		for i := range 4 {
			d := fmt.Sprintf("repo/.git/objects/%02x", i)
			w.mkdir(d)
			w.create(d+"/tmp_obj", fmt.Sprint("object ", i))
			w.link(d+"/tmp_obj", fmt.Sprintf("%s/%038d", d, i))
			w.remove(d + "/tmp_obj")
		}
		for i := range 3 {
			w.create("repo/.git/index.lock", fmt.Sprint("index ", i))
			w.rename("repo/.git/index.lock", "repo/.git/index", 0)
		}
		w.create("repo/main.go", "package main")
	})
	after := w.snapshot()
	out := w.rollback(t1, false)
	w.same("after the rollback", before)
	if n := w.groupRemoves(out.Rollback); n != 1 {
		t.Errorf("the rollback moved %d entries aside, want 1 (the tree)", n)
	}
	w.unrevert(false)
	w.same("after the unrevert", after)
}

// TestRollbackTreeOneByOne: a created tree that holds something no
// rolled-back change made, or an inode with a name outside it, is not
// moved whole: its entries go one by one and the foreign ones stay.
func TestRollbackTreeOneByOne(t *testing.T) {
	t.Run("hard link to a file outside the tree", func(t *testing.T) {
		w := newWS(t)
		w.put("shared", "s")
		before := w.snapshot()
		t1 := w.turn(func() {
			w.mkdir("t")
			w.create("t/a", "a")
			w.create("t/b", "b")
			w.link("shared", "t/shared")
		})
		out := w.rollback(t1, false)
		w.same("after the rollback", before)
		if n := w.groupRemoves(out.Rollback); n != 4 {
			t.Errorf("the rollback moved %d entries aside, want 4 (one by one)", n)
		}
		if got := w.read("shared"); got != "s" {
			t.Errorf("shared = %q", got)
		}
	})
	t.Run("file added outside a turn", func(t *testing.T) {
		w := newWS(t)
		t1 := w.turn(func() {
			w.mkdir("t")
			w.mkdir("t/sub")
			w.create("t/sub/a", "a")
			w.create("t/b", "b")
		})
		w.create("t/sub/user", "u")
		out := w.rollback(t1, false)
		if !w.exists("t/sub/user") || w.exists("t/sub/a") || w.exists("t/b") {
			t.Errorf("want only t/sub/user (and its directories) left:\n%s", w.snapshot())
		}
		wantReport(t, "rollback", out.Report,
			"t skip ("+reasonNotEmpty+")", "t/sub skip ("+reasonNotEmpty+")", "t/sub/a delete", "t/b delete",
			"t/sub/user skip ("+reasonOutside+")")
	})
}

// TestRollbackTreesAtOnePath: two directories made at one path by
// different turns (the first removed in between) are two trees. The
// removes beneath the second were folded into the first's remove, its
// path's other one: the second directory, still full when its own
// remove came, stayed — the dry run said it went — and the first could
// not come back.
func TestRollbackTreesAtOnePath(t *testing.T) {
	w := newWS(t)
	before := w.snapshot()
	t1 := w.turn(func() { w.mkdir("f") })
	w.turn(func() {
		w.remove("f")
		w.mkdir("f")
		w.create("f/b", "in the second f")
	})
	w.previewThenRun(t1, false)
	w.same("after the rollback", before)
}
