package rollback

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
	"golang.org/x/sys/unix"
)

// TestFind: what a path held when a turn began (cat --at, diff) is
// found through later renames, removals kept aside and overwrites, and
// materialized byte for byte; a path that did not exist is reported so.
func TestFind(t *testing.T) {
	w := newWS(t)
	w.put("f", "0123456789")
	w.put("d/x", "in d")
	w.put("gone", "removed later")
	w.put("r", "replaced later")
	t1 := w.turn(func() {
		w.write("f", 2, "ab")
		w.truncate("f", 6)
		w.create("new", "new in turn 1")
	})
	w.turn(func() {
		w.rename("d", "e", 0)
		w.write("e/x", 0, "IN E, LONGER")
		w.remove("gone")
		w.create("tmp", "replacement")
		w.rename("tmp", "r", 0)
		w.write("f", 0, "F")
	})
	t3 := w.begin()
	w.end()

	for _, c := range []struct {
		turn journal.Turn
		path string
		want string // "-": did not exist
	}{
		{t1, "f", "0123456789"},
		{t1, "d/x", "in d"},
		{t1, "e/x", "-"},
		{t1, "gone", "removed later"},
		{t1, "r", "replaced later"},
		{t1, "new", "-"},
		{w.turnNum(2), "f", "01ab45"},
		{w.turnNum(2), "new", "new in turn 1"},
		{t3, "e/x", "IN E, LONGER"},
		{t3, "d/x", "-"},
		{t3, "gone", "-"},
		{t3, "r", "replacement"},
	} {
		got, err := w.readAt(c.turn, c.path)
		if err != nil || got != c.want {
			t.Errorf("turn %d %s = %q, %v; want %q", c.turn.Num, c.path, got, err, c.want)
		}
	}
}

// TestFindThroughLaterRenames (#32, case 3): a path that held nothing
// when a turn began, inside a directory that a later turn renamed (or
// whose parent it renamed, or that it exchanged), held nothing: Find
// followed the directory to its new name, found nothing there and
// reported an error ("open lib/b.js") instead.
func TestFindThroughLaterRenames(t *testing.T) {
	for _, c := range []struct {
		name, base string
		rename     func(w *ws)
	}{
		{"parent", "src", func(w *ws) { w.rename("src", "lib", 0) }},
		{"grand-parent", "top/src", func(w *ws) { w.rename("top", "up", 0) }},
		{"exchange", "src", func(w *ws) { w.rename("src", "other", unix.RENAME_EXCHANGE) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWS(t)
			b := c.base
			w.put(b+"/a.js", "a0")
			w.put(b+"/b.js", "b0")
			w.put("other/o.js", "o0")
			t1 := w.turn(func() {
				w.write(b+"/a.js", 0, "a1")
				w.remove(b + "/b.js")
				w.create(b+"/n.js", "n1")
			})
			t2 := w.turn(func() { c.rename(w) })
			for _, q := range []struct {
				turn journal.Turn
				path string
				want string // "-": did not exist
			}{
				{t1, b + "/a.js", "a0"},
				{t1, b + "/b.js", "b0"},
				{t1, b + "/n.js", "-"},
				{t1, "other/o.js", "o0"},
				{t2, b + "/a.js", "a1"},
				{t2, b + "/b.js", "-"},
				{t2, b + "/n.js", "n1"},
				{t2, "other/o.js", "o0"},
				{t2, "other/b.js", "-"},
			} {
				got, err := w.readAt(q.turn, q.path)
				if err != nil || got != q.want {
					t.Errorf("turn %d %s = %q, %v; want %q", q.turn.Num, q.path, got, err, q.want)
				}
			}
		})
	}
}

// readAt returns what p held when turn began, "-" if nothing.
func (w *ws) readAt(turn journal.Turn, p string) (string, error) {
	w.t.Helper()
	at, err := Since(w.j, w.env.Tree, turn.StartSeq, w.j.NextSeq(), func(n string) string { return aside.Prefix + n }, w.dev)
	if err != nil {
		w.t.Fatal(err)
	}
	v, err := at.Find(p)
	switch {
	case err != nil:
		return "", err
	case !v.Exists:
		return "-", nil
	case v.Type != syscall.S_IFREG:
		return "", errors.New("not a file")
	}
	tmp, err := os.CreateTemp(w.t.TempDir(), "v")
	if err != nil {
		w.t.Fatal(err)
	}
	defer tmp.Close()
	if err := v.Materialize(w.env.Tree, w.j, tmp); err != nil {
		return "", err
	}
	b, err := os.ReadFile(tmp.Name())
	return string(b), err
}
