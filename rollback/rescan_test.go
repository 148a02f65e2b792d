package rollback

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
	scanner "github.com/cowfs/cowfs/rescan"
)

// withRescan wires a rescanner as the daemon does: a rollback or an
// unrevert scans before it plans, a rollback's and an unrevert's changes
// are taken as explained when they are done, and turns begin and end with a scan (w.scan).
func withRescan(w *ws) *scanner.Scanner {
	w.t.Helper()
	s, err := scanner.New(w.j, w.env.Tree, w.dev, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.env.Rescan = func(g journal.Gate) error {
		_, err := s.Scan(g, nil)
		return err
	}
	w.env.Refresh = s.Refresh
	w.env.Unjournaled = s.Accept
	return s
}

// scan runs s as a turn boundary does, and returns what it found.
func scan(w *ws, s *scanner.Scanner) []scanner.Found {
	w.t.Helper()
	g := w.j.Exclusive()
	defer g.Leave()
	found, err := s.Scan(g.InTurn(), nil)
	if err != nil {
		w.t.Fatal(err)
	}
	return found
}

// scannedTurn is w.turn with the scans at its boundaries.
func scannedTurn(w *ws, s *scanner.Scanner, changes func()) journal.Turn {
	w.t.Helper()
	if found := scan(w, s); len(found) != 0 {
		w.t.Errorf("before the turn: found changes outside the mount: %+v", found)
	}
	t := w.begin()
	changes()
	if found := scan(w, s); len(found) != 0 {
		w.t.Errorf("at the end of the turn: found changes outside the mount: %+v", found)
	}
	w.end()
	return t
}

// TestRollbackRescans: a file edited behind the mount's back after the
// turn, with nothing journaled, is found by the scan a rollback makes
// before it plans, and left as it is; the rest is rolled back. Neither
// the rollback's changes nor its unrevert's look like changes outside
// the mount to the scans that follow.
func TestRollbackRescans(t *testing.T) {
	w := newWS(t)
	s := withRescan(w)
	w.put("f", "original f")
	w.put("g", "original g")
	t1 := scannedTurn(w, s, func() {
		w.write("f", 0, "TURN")
		w.write("g", 0, "TURN")
		w.create("n", "new")
		w.remove("g")
	})
	must(t, os.WriteFile(w.abs("f"), []byte("edited by hand, behind the mount"), 0o644))
	edited := w.snapshot()

	out := w.rollback(t1, false)
	wantReport(t, "rollback", out.Report, "f skip ("+reasonOutsideMount+")", "g recover", "n delete")
	if got := w.read("f"); got != "edited by hand, behind the mount" {
		t.Errorf("f = %q: the hand edit was overwritten", got)
	}
	if got := w.read("g"); got != "original g" {
		t.Errorf("g = %q", got)
	}
	if found := scan(w, s); len(found) != 0 {
		t.Errorf("after the rollback: %+v", found)
	}

	w.unrevert(false)
	w.same("after the unrevert", edited)
	if found := scan(w, s); len(found) != 0 {
		t.Errorf("after the unrevert: %+v", found)
	}
	scannedTurn(w, s, func() {})
}

// TestUnrevertAcceptsOnlyWhatItLeft: an unrevert's changes are taken as
// explained only where the workspace holds what the unrevert left. A
// file exchanged behind the mount into the place of one the unrevert
// brought back, in the instant before the unrevert accepts its work, is
// found by the next scan as replaced outside the mount, so no later
// rollback takes it for the turn's file.
func TestUnrevertAcceptsOnlyWhatItLeft(t *testing.T) {
	w := newWS(t)
	s := withRescan(w)
	w.put("other", "root's")
	t1 := scannedTurn(w, s, func() { w.create("n", "new") })
	w.rollback(t1, false)
	var once sync.Once // after the unrevert's first step: n is back
	w.env.AfterStep = func(int) {
		once.Do(func() {
			must(t, unix.Renameat2(unix.AT_FDCWD, w.abs("n"), unix.AT_FDCWD, w.abs("other"), unix.RENAME_EXCHANGE))
		})
	}
	w.unrevert(false)
	w.env.AfterStep = nil
	found := scan(w, s)
	if len(found) != 1 || found[0].Path != "n" {
		t.Errorf("after an exchange behind the unrevert's back, the scan found %+v; want n changed outside the mount", found)
	}
	out := w.rollback(t1, false)
	wantReport(t, "rollback after the exchange", out.Report, "n skip ("+reasonOutsideMount+")")
	if got := w.read("n"); got != "root's" {
		t.Errorf("n = %q: the file exchanged in was taken for the turn's", got)
	}
}

// recordingObserver notes what a rollback tells the mount.
type recordingObserver struct{ events []string }

func (o *recordingObserver) Moved(from, to string, ino uint64, linked bool) {
	o.events = append(o.events, fmt.Sprintf("moved %s -> %s", trimAside(from), trimAside(to)))
}
func (o *recordingObserver) Exchanged(a, b string) {
	o.events = append(o.events, fmt.Sprintf("exchanged %s %s", a, b))
}
func (o *recordingObserver) Changed(path string, ino uint64, linked bool) {
	o.events = append(o.events, fmt.Sprintf("changed %s linked=%v", path, linked))
}
func (o *recordingObserver) Rewritten(path string, ino uint64, linked bool) {
	o.events = append(o.events, fmt.Sprintf("rewritten %s linked=%v", path, linked))
}

// trimAside names any aside entry "aside".
func trimAside(p string) string {
	if len(p) > len(".cowfs/aside/") && p[:len(".cowfs/aside/")] == ".cowfs/aside/" {
		return "aside"
	}
	return p
}

// TestRollbackTellsObserver: every change a rollback makes to the
// backing directory is told to the mount, which must correct what it
// and the kernel cache.
func TestRollbackTellsObserver(t *testing.T) {
	w := newWS(t)
	w.put("data", "0123")
	w.put("linked", "l")
	linkDirect(w, "linked", "other-name")
	w.put("gone", "g")
	w.put("a", "a")
	w.put("x", "x")
	w.put("y", "y")
	t1 := w.turn(func() {
		w.write("data", 0, "D")
		w.chmod("linked", 0o600)
		w.remove("gone")
		w.rename("a", "b", 0)
		w.rename("x", "y", 2) // RENAME_EXCHANGE
		w.create("new", "n")
	})
	o := &recordingObserver{}
	w.env.Observer = o
	w.rollback(t1, false)
	want := []string{
		"moved new -> aside",
		"exchanged y x",
		"moved b -> a",
		"moved aside -> gone",
		"changed linked linked=true",
		// Bytes put back make the kernel's pages stale, a chmod does not.
		"rewritten data linked=false",
	}
	got := map[string]int{}
	for _, e := range o.events {
		got[e]++
	}
	for _, e := range want {
		if got[e] == 0 {
			t.Errorf("the observer was not told %q; it was told %q", e, o.events)
		}
	}
}

// TestWatchedAfterRollback (#32, case 2): a file a rollback restored
// is still watched: written behind the mount after the rollback, it is
// a change outside the mount to the next rollback, which keeps it and
// says so — the rollback's own records, which explain its own changes,
// do not explain a later one.
func TestWatchedAfterRollback(t *testing.T) {
	w := newWS(t)
	s := withRescan(w)
	g1 := scannedTurn(w, s, func() { w.create("other", "g1") })
	scannedTurn(w, s, func() { w.create("H", "made by g2") })
	g3 := scannedTurn(w, s, func() { w.write("H", 0, "EDITED") })
	w.rollback(g3, false)
	must(t, os.WriteFile(w.abs("H"), []byte("written behind the mount"), 0o644))

	out := w.rollback(g1, false)
	wantReport(t, "rollback to before g1", out.Report, "H skip ("+reasonOutsideMount+")", "other delete")
	if !w.exists("H") || w.read("H") != "written behind the mount" {
		t.Errorf("H was not kept as written behind the mount")
	}
}

// TestWatchedAfterUnrevert: the same after an unrevert.
func TestWatchedAfterUnrevert(t *testing.T) {
	w := newWS(t)
	s := withRescan(w)
	g1 := scannedTurn(w, s, func() { w.create("H", "made by g1") })
	g2 := scannedTurn(w, s, func() { w.write("H", 0, "EDITED") })
	w.rollback(g2, false)
	w.unrevert(false)
	must(t, os.WriteFile(w.abs("H"), []byte("written behind the mount"), 0o644))

	out := w.rollback(g1, false)
	wantReport(t, "rollback to before g1", out.Report, "H skip ("+reasonOutsideMount+")")
	if !w.exists("H") || w.read("H") != "written behind the mount" {
		t.Errorf("H was not kept as written behind the mount")
	}
}
