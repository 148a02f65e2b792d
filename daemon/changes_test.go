package daemon

import (
	"fmt"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

func TestChanges(t *testing.T) {
	const file, dir = 0o100000, 0o040000
	recs := []*journal.Record{
		// echo > a.txt, then sed -i a.txt
		{Kind: journal.KindAttr, Cause: journal.CauseTruncate, Path: "a.txt", Type: file, Caller: journal.Caller{Comm: "bash"}},
		{Kind: journal.KindData, Path: "a.txt", Len: 12},
		{Kind: journal.KindCreate, Path: "sedX", Type: file, Caller: journal.Caller{Comm: "sed"}},
		{Kind: journal.KindRename, Path: "sedX", Path2: "a.txt", Aside: "1", Type: file, Attr: journal.Attr{Size: 8}},
		// temp file created and deleted: nothing
		{Kind: journal.KindCreate, Path: "tmp", Type: file},
		{Kind: journal.KindRemove, Path: "tmp", Type: file},
		// mv b c over an existing c
		{Kind: journal.KindRename, Path: "b", Path2: "c", Aside: "2", Type: file, Attr: journal.Attr{Size: 3}},
		// a new directory with a file, renamed
		{Kind: journal.KindCreate, Path: "d", Type: dir},
		{Kind: journal.KindCreate, Path: "d/f", Type: file},
		{Kind: journal.KindRename, Path: "d", Path2: "e", Type: dir},
		// chmod only
		{Kind: journal.KindAttr, Cause: journal.CauseMode, Path: "m", Type: file},
		// a directory's times changing is not a change
		{Kind: journal.KindAttr, Cause: journal.CauseDirent, Path: ".", Type: dir},
		// moved, then deleted: the old path is deleted
		{Kind: journal.KindRename, Path: "x", Path2: "y", Type: file},
		{Kind: journal.KindRemove, Path: "y", Type: file, Aside: "3", Attr: journal.Attr{Size: 5}},
		// mkdir -p n/x o; mv -T n o; rm -r o: nothing
		{Kind: journal.KindCreate, Path: "n", Type: dir},
		{Kind: journal.KindCreate, Path: "n/x", Type: dir},
		{Kind: journal.KindCreate, Path: "o", Type: dir},
		{Kind: journal.KindRename, Path: "n", Path2: "o", Aside: "4", Type: dir},
		{Kind: journal.KindRemove, Path: "o/x", Type: dir, Aside: "5"},
		{Kind: journal.KindRemove, Path: "o", Type: dir, Aside: "6"},
		// a new file renamed over a new file is created
		{Kind: journal.KindCreate, Path: "p", Type: file},
		{Kind: journal.KindCreate, Path: "q", Type: file},
		{Kind: journal.KindRename, Path: "p", Path2: "q", Aside: "7", Type: file},
	}
	got := map[string]string{}
	for _, c := range foldChanges(recs) {
		got[c.Path] = fmt.Sprintf("%s from=%s bytes=%d by=%s", c.Kind, c.From, c.Bytes, c.Caller.Comm)
	}
	want := map[string]string{
		"a.txt": "modified from= bytes=20 by=bash",
		"c":     "renamed from=b bytes=3 by=",
		"e":     "created from= bytes=0 by=",
		"e/f":   "created from= bytes=0 by=",
		"m":     "metadata from= bytes=0 by=",
		"x":     "deleted from= bytes=5 by=",
		"q":     "created from= bytes=0 by=",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q", p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected change %s: %s", p, got[p])
		}
	}
}

// TestChangeOrigins: each change knows where what it is about was when
// the run began — through renames of its directories before and after
// it, its own renames, a replacing rename (sed -i) and exchanges — so a
// diff reads the old version there (#32, case 3).
func TestChangeOrigins(t *testing.T) {
	const file, dir = 0o100000, 0o040000
	recs := []*journal.Record{
		{Kind: journal.KindRename, Path: "src", Path2: "lib", Type: dir},
		{Kind: journal.KindData, Path: "lib/a.js", Type: file, Len: 1},
		{Kind: journal.KindRemove, Path: "lib/b.js", Type: file, Aside: "1"},
		{Kind: journal.KindRename, Path: "lib/c.js", Path2: "lib/d.js", Type: file},
		{Kind: journal.KindCreate, Path: "lib/sedX", Type: file},
		{Kind: journal.KindRename, Path: "lib/sedX", Path2: "lib/e.js", Aside: "2", Type: file},
		{Kind: journal.KindCreate, Path: "new", Type: dir},
		{Kind: journal.KindRename, Path: "lib/f.js", Path2: "new/f.js", Type: file},
		{Kind: journal.KindData, Path: "x/z", Type: file, Len: 1},
		{Kind: journal.KindRename, Path: "x", Path2: "y", Type: dir, Flags: 2}, // RENAME_EXCHANGE
		{Kind: journal.KindRename, Path: "lib", Path2: "top", Type: dir},
		{Kind: journal.KindRemove, Path: "top/g.js", Type: file, Aside: "3"},
	}
	got := map[string]string{}
	for _, c := range foldChanges(recs) {
		got[c.Path] = fmt.Sprintf("%s origin=%s", c.Kind, c.Origin)
	}
	want := map[string]string{
		"top":      "renamed origin=src",
		"top/a.js": "modified origin=src/a.js",
		"top/b.js": "deleted origin=src/b.js",
		"top/d.js": "renamed origin=src/c.js",
		"top/e.js": "modified origin=src/e.js",
		"top/g.js": "deleted origin=src/g.js",
		"new":      "created origin=",
		"new/f.js": "renamed origin=src/f.js",
		"x":        "modified origin=y",
		"y":        "modified origin=x",
		"y/z":      "modified origin=x/z",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q", p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected change %s: %s", p, got[p])
		}
	}
}

// A file created in the run and then replaced by another new one (sed -i
// on a file the same turn made) is one change, created, made by whoever
// created it first and in that step: the path's history starts there,
// not at the temporary file that replaced it.
func TestChangeNewFileReplacedKeepsItsFirstChange(t *testing.T) {
	const file = 0o100000
	sh, sed := journal.Caller{Pid: 1, Comm: "sh"}, journal.Caller{Pid: 2, Comm: "sed"}
	for _, aside := range []string{"", "1"} {
		recs := []*journal.Record{
			{Seq: 1, Kind: journal.KindCreate, Path: "app.js", Type: file, Caller: sh, Step: "s1"},
			{Seq: 2, Kind: journal.KindCreate, Path: "sedX", Type: file, Caller: sed, Step: "s2"},
			{Seq: 3, Kind: journal.KindRename, Path: "sedX", Path2: "app.js", Aside: aside, Type: file, Caller: sed, Step: "s2"},
		}
		cs := foldChanges(recs)
		if len(cs) != 1 || cs[0].Path != "app.js" || cs[0].Kind != changeCreated || cs[0].Caller != sh || cs[0].Step != "s1" || cs[0].Seq != 1 {
			t.Errorf("aside %q: %+v", aside, cs)
		}
	}
}
