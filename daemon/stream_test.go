package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// diffLines returns the +/- lines of each file of d, by path.
func diffLines(t *testing.T, d ctl.Diff) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range d.Files {
		out[string(f.Path)] = f.Status + " " + changedLines(f.Diff)
	}
	return out
}

// settle waits out the filesystem clock's tick, so that the files'
// change times are old enough for a copy made without the gate to tell
// whether they changed (quietFor). It is setup, not an assertion: a
// slower machine only waits the same.
func settle() { time.Sleep(2 * quietFor) }

// TestDiffWhileWriting: a diff leaves the gate before it copies its
// files, so changes go on meanwhile — here made at that exact point, by
// the hook — and it stays one view of the workspace. Ends the records
// rebuild (a turn's start and end) come out exact whatever changed
// since, a pre-image journaled then or bytes rewritten with none; an end
// at "now" whose file changed during the copy is made again, as one
// view of a later moment.
func TestDiffWhileWriting(t *testing.T) {
	td := newTestDaemon(t)
	must(t, os.WriteFile(filepath.Join(td.ws, "a.txt"), []byte("a0\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(td.ws, "b.txt"), []byte("b0\n"), 0o644))
	td.begin() // turn 1
	td.write("a.txt", "a1\n")
	td.write("b.txt", "b1\n")
	td.end()
	td.begin() // turn 2, open
	td.write("a.txt", "a2\n")
	settle()

	calls := 0
	td.d.leftGate = func() {
		calls++
		if calls > 1 {
			return
		}
		// b's first change in turn 2 journals its pre-image; a was
		// journaled already in turn 2, so bytes written to it now
		// journal nothing (the mount's capture state says so).
		td.write("b.txt", "b2, written during the diff\n")
		must(t, os.WriteFile(filepath.Join(td.ws, "a.txt"), []byte("a3, written during the diff\n"), 0o644))
	}
	d, err := td.svc().Diff(context.Background(), ctl.DiffRequest{From: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("the diff left the gate %d times before copying, want once", calls)
	}
	got := diffLines(t, d)
	want := map[string]string{"a.txt": "modified -a0 +a1", "b.txt": "modified -b0 +b1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diff of turn 1, written to during the copy: %v, want %v", got, want)
	}

	// An end at now: a changes while it is copied, so the diff is made
	// again — this time each file changed just before the pin and is
	// copied under the gate — and shows the workspace as it is then.
	settle()
	calls = 0
	td.d.leftGate = func() {
		calls++
		if calls == 1 {
			must(t, os.WriteFile(filepath.Join(td.ws, "a.txt"), []byte("a4\n"), 0o644))
		}
	}
	d, err = td.svc().Diff(context.Background(), ctl.DiffRequest{From: "2", To: "now"})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("the diff to now left the gate %d times, want 2 (made again once)", calls)
	}
	got = diffLines(t, d)
	want = map[string]string{"a.txt": "modified -a1 +a4", "b.txt": "modified -b1 +b2, written during the diff"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diff of turn 2 to now, written to during the copy: %v, want %v", got, want)
	}
}

// TestLargeTurnDiff: the diff of a turn of many files, each with its
// own records, reads each file's records from an index built in one
// pass over the turn — not a pass over every record per file — and
// shows every file exactly.
func TestLargeTurnDiff(t *testing.T) {
	const n = 5000
	td := newTestDaemon(t)
	for i := 0; i < n; i++ {
		must(t, os.WriteFile(filepath.Join(td.ws, fmt.Sprintf("f%04d", i)), []byte(fmt.Sprintf("old %d\n", i)), 0o644))
	}
	td.begin()
	for i := 0; i < n; i++ {
		td.write(fmt.Sprintf("f%04d", i), fmt.Sprintf("new %d\n", i))
	}
	td.end()
	d, err := td.svc().Diff(context.Background(), ctl.DiffRequest{From: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != n {
		t.Fatalf("%d files in the diff, want %d", len(d.Files), n)
	}
	for i, f := range d.Files {
		want := fmt.Sprintf("-old %d +new %d", i, i)
		if string(f.Path) != fmt.Sprintf("f%04d", i) || changedLines(f.Diff) != want {
			t.Fatalf("file %d: %s %q, want %q", i, f.Path, changedLines(f.Diff), want)
		}
	}
}

// TestContentWhileRenamedAndWritten: content at a turn is copied
// without the gate; a file renamed away and rewritten between the
// lookup and the copy (by the hook) still comes out as the turn found
// it, across earlier turns that renamed and rewrote it too.
func TestContentWhileRenamedAndWritten(t *testing.T) {
	td := newTestDaemon(t)
	must(t, os.WriteFile(filepath.Join(td.ws, "f"), []byte("v0\n"), 0o644))
	td.begin() // 1: rewritten
	td.write("f", "v1\n")
	td.end()
	td.begin() // 2: renamed to g, rewritten
	td.rename("f", "g")
	td.write("g", "v2, longer\n")
	td.end()
	td.begin() // 3: renamed to h, rewritten shorter, a new f
	td.rename("g", "h")
	td.write("h", "3\n")
	td.create("f", "another f\n")
	td.end()
	td.begin() // 4, open

	for _, c := range []struct{ at, path, want, now string }{ // now: where the object is today
		{"1", "f", "v0\n", "h"},
		{"2", "f", "v1\n", "h"},
		{"3", "g", "v2, longer\n", "h"},
		{"4", "h", "3\n", "h"},
		{"4", "f", "another f\n", "f"},
	} {
		calls := 0
		td.d.leftGate = func() {
			calls++
			// The object moves on while it is copied: renamed, then
			// rewritten where it went, then renamed back.
			cur := c.now
			td.rename(cur, cur+".moved")
			td.write(cur+".moved", strings.Repeat("x", 100)+"\n")
			td.rename(cur+".moved", cur)
		}
		rc, err := td.svc().Content(context.Background(), c.at, c.path)
		if err != nil {
			t.Fatalf("content of %s at %s: %v", c.path, c.at, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != c.want || calls != 1 {
			t.Errorf("content of %s at %s = %q, %v (left the gate %d times), want %q", c.path, c.at, b, err, calls, c.want)
		}
	}
}
