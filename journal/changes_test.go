package journal

import (
	"fmt"
	"testing"
)

func TestChanges(t *testing.T) {
	const file, dir = 0o100000, 0o040000
	recs := []*Record{
		// echo > a.txt, then sed -i a.txt
		{Kind: KindAttr, Cause: CauseTruncate, Path: "a.txt", Type: file, Caller: Caller{Comm: "bash"}},
		{Kind: KindData, Path: "a.txt", Len: 12},
		{Kind: KindCreate, Path: "sedX", Type: file, Caller: Caller{Comm: "sed"}},
		{Kind: KindRename, Path: "sedX", Path2: "a.txt", Aside: "1", Type: file, Attr: Attr{Size: 8}},
		// temp file created and deleted: nothing
		{Kind: KindCreate, Path: "tmp", Type: file},
		{Kind: KindRemove, Path: "tmp", Type: file},
		// mv b c over an existing c
		{Kind: KindRename, Path: "b", Path2: "c", Aside: "2", Type: file, Attr: Attr{Size: 3}},
		// a new directory with a file, renamed
		{Kind: KindCreate, Path: "d", Type: dir},
		{Kind: KindCreate, Path: "d/f", Type: file},
		{Kind: KindRename, Path: "d", Path2: "e", Type: dir},
		// chmod only
		{Kind: KindAttr, Cause: CauseMode, Path: "m", Type: file},
		// a directory's times changing is not a change
		{Kind: KindAttr, Cause: CauseDirent, Path: ".", Type: dir},
		// moved, then deleted: the old path is deleted
		{Kind: KindRename, Path: "x", Path2: "y", Type: file},
		{Kind: KindRemove, Path: "y", Type: file, Aside: "3", Attr: Attr{Size: 5}},
		// mkdir -p n/x o; mv -T n o; rm -r o: nothing
		{Kind: KindCreate, Path: "n", Type: dir},
		{Kind: KindCreate, Path: "n/x", Type: dir},
		{Kind: KindCreate, Path: "o", Type: dir},
		{Kind: KindRename, Path: "n", Path2: "o", Aside: "4", Type: dir},
		{Kind: KindRemove, Path: "o/x", Type: dir, Aside: "5"},
		{Kind: KindRemove, Path: "o", Type: dir, Aside: "6"},
		// a new file renamed over a new file is created
		{Kind: KindCreate, Path: "p", Type: file},
		{Kind: KindCreate, Path: "q", Type: file},
		{Kind: KindRename, Path: "p", Path2: "q", Aside: "7", Type: file},
	}
	got := map[string]string{}
	for _, c := range Changes(recs) {
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
	recs := []*Record{
		{Kind: KindRename, Path: "src", Path2: "lib", Type: dir},
		{Kind: KindData, Path: "lib/a.js", Type: file, Len: 1},
		{Kind: KindRemove, Path: "lib/b.js", Type: file, Aside: "1"},
		{Kind: KindRename, Path: "lib/c.js", Path2: "lib/d.js", Type: file},
		{Kind: KindCreate, Path: "lib/sedX", Type: file},
		{Kind: KindRename, Path: "lib/sedX", Path2: "lib/e.js", Aside: "2", Type: file},
		{Kind: KindCreate, Path: "new", Type: dir},
		{Kind: KindRename, Path: "lib/f.js", Path2: "new/f.js", Type: file},
		{Kind: KindData, Path: "x/z", Type: file, Len: 1},
		{Kind: KindRename, Path: "x", Path2: "y", Type: dir, Flags: 2}, // RENAME_EXCHANGE
		{Kind: KindRename, Path: "lib", Path2: "top", Type: dir},
		{Kind: KindRemove, Path: "top/g.js", Type: file, Aside: "3"},
	}
	got := map[string]string{}
	for _, c := range Changes(recs) {
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
	sh, sed := Caller{Pid: 1, Comm: "sh"}, Caller{Pid: 2, Comm: "sed"}
	for _, aside := range []string{"", "1"} {
		recs := []*Record{
			{Seq: 1, Kind: KindCreate, Path: "app.js", Type: file, Caller: sh, Step: "s1"},
			{Seq: 2, Kind: KindCreate, Path: "sedX", Type: file, Caller: sed, Step: "s2"},
			{Seq: 3, Kind: KindRename, Path: "sedX", Path2: "app.js", Aside: aside, Type: file, Caller: sed, Step: "s2"},
		}
		cs := Changes(recs)
		if len(cs) != 1 || cs[0].Path != "app.js" || cs[0].Kind != Created || cs[0].Caller != sh || cs[0].Step != "s1" || cs[0].Seq != 1 {
			t.Errorf("aside %q: %+v", aside, cs)
		}
	}
}
