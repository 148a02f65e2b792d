package rollback

import (
	"testing"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

func TestPast(t *testing.T) {
	asidePath := func(n string) string { return ".cowfs/aside/" + n }
	p := newPast(asidePath)
	// Newest first: d renamed to e, then e/x written (no effect on the
	// namespace), then f removed (kept aside), then g created.
	for _, r := range []*journal.Record{
		{Kind: journal.KindCreate, Path: "g"},
		{Kind: journal.KindRemove, Path: "f", Aside: "a1", Ino: 7},
		{Kind: journal.KindRename, Path: "d", Path2: "e", Type: 0o040000},
		{Kind: journal.KindRename, Path: "t", Path2: "u", Aside: "a2", Ino: 3, Ino2: 9},
	} {
		s := slim(r)
		p.undo(&s)
	}
	cases := map[string]entry{
		"g":     {absent: true},
		"f":     {loc: ".cowfs/aside/a1", ino: 7, kept: true},
		"d":     {loc: "e"},
		"d/x/y": {loc: "e/x/y"},
		"e":     {absent: true},
		"e/x":   {absent: true},
		"t":     {loc: "u"},
		"u":     {loc: ".cowfs/aside/a2", ino: 9, kept: true},
		"other": {loc: "other"},
	}
	for path, want := range cases {
		if got := p.lookup(path); got != want {
			t.Errorf("lookup(%q) = %+v, want %+v", path, got, want)
		}
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{"a/b": "a/b", "a/../b": "b", ".": "", "a/": "a", "./a": "a"} {
		if got, err := backing.CleanPath(in); err != nil || got != want {
			t.Errorf("backing.CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/etc", "..", "../x", "a/../../x"} {
		if _, err := backing.CleanPath(bad); err == nil {
			t.Errorf("backing.CleanPath(%q) accepted", bad)
		}
	}
}
