package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// A diff copies its files with the journal's gate left (daemon's Diff),
// so writes through the mount go on while it is made; it stays one view:
// a finished turn's diff is exactly what the turn did, however often
// the files it changed are rewritten, renamed over (sed -i) and
// replaced meanwhile, and a diff to now names every file once, each
// either as it stood or as the writer left it, never torn.
func TestDiffWhileWriting(t *testing.T) {
	const n = 40
	w := newWorkspace(t)
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(w.dir, fmt.Sprintf("f%02d", i)), []byte(fmt.Sprintf("old %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.mount()
	w.cowfs("turn", "begin")
	for i := 0; i < n; i++ {
		if err := os.WriteFile(w.path(fmt.Sprintf("f%02d", i)), []byte(fmt.Sprintf("new %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			p := w.path(fmt.Sprintf("f%02d", k%n))
			var err error
			switch k % 3 {
			case 0: // rewritten in place
				err = os.WriteFile(p, []byte(fmt.Sprintf("written %d\n", k)), 0o644)
			case 1: // replaced by a rename, as sed -i does
				tmp := p + ".tmp"
				if err = os.WriteFile(tmp, []byte(fmt.Sprintf("replaced %d\n", k)), 0o644); err == nil {
					err = os.Rename(tmp, p)
				}
			case 2: // appended to
				var f *os.File
				if f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err == nil {
					_, err = fmt.Fprintf(f, "appended %d\n", k)
					f.Close()
				}
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	c := ctl.NewClient(w.status().Socket)
	for round := 0; round < 5; round++ {
		d, err := c.Diff(context.Background(), ctl.DiffRequest{From: "1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Files) != n {
			t.Fatalf("round %d: the diff of turn 1 names %d files, want %d", round, len(d.Files), n)
		}
		for i, f := range d.Files {
			want := fmt.Sprintf("-old %d\n+new %d\n", i, i)
			if string(f.Path) != fmt.Sprintf("f%02d", i) || f.Status != "modified" || !strings.HasSuffix(f.Diff, want) {
				t.Fatalf("round %d: %s %s while turn 2 writes it:\n%s\nwant %q", round, f.Path, f.Status, f.Diff, want)
			}
		}
		now, err := c.Diff(context.Background(), ctl.DiffRequest{From: "2", To: "now"})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[ctl.Path]bool{}
		for _, f := range now.Files {
			if seen[f.Path] {
				t.Fatalf("round %d: %s twice in the diff to now", round, f.Path)
			}
			seen[f.Path] = true
			for _, l := range strings.Split(f.Diff, "\n") {
				if !strings.HasPrefix(l, "+") || strings.HasPrefix(l, "+++") {
					continue
				}
				// Every line the writer wrote is whole.
				var what string
				var k int
				if _, err := fmt.Sscanf(l[1:], "%s %d", &what, &k); err != nil || fmt.Sprintf("%s %d", what, k) != l[1:] {
					t.Fatalf("round %d: %s has the torn line %q:\n%s", round, f.Path, l, f.Diff)
				}
			}
		}
	}
	close(stop)
	wg.Wait()
	w.cowfs("turn", "end")
}

// cat --at reads a file as each turn found it, through renames and
// rewrites in later turns (the object followed from path to path, its
// pre-images put back across them) and a new file at its old name.
func TestCatRenamedAndRewritten(t *testing.T) {
	w := newWorkspace(t)
	if err := os.WriteFile(filepath.Join(w.dir, "f"), []byte("v0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.mount()
	w.cowfs("turn", "begin") // 1
	w.sh("printf 'v1\\n' > f")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin") // 2
	w.sh("mv f g && printf 'v2, longer\\n' > g")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin") // 3
	w.sh("mv g h && printf 'v3\\n' >> h && sed -i 's/v2/V2/' h && printf 'another f\\n' > f")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin") // 4
	w.sh("printf 'v4\\n' > h && mv h f")
	for _, c := range []struct{ at, path, want string }{
		{"1", "f", "v0\n"},
		{"2", "f", "v1\n"},
		{"3", "g", "v2, longer\n"},
		{"4", "h", "V2, longer\nv3\n"},
		{"4", "f", "another f\n"},
	} {
		if got := w.cowfs("cat", "--at", c.at, c.path); got != c.want {
			t.Errorf("cat --at %s %s = %q, want %q", c.at, c.path, got, c.want)
		}
	}
	for _, c := range []struct{ at, path string }{{"1", "g"}, {"2", "h"}, {"3", "h"}} {
		if _, _, code := w.run("cat", "--at", c.at, c.path); code != 5 {
			t.Errorf("cat --at %s %s of what did not exist: exit %d, want 5", c.at, c.path, code)
		}
	}
	w.cowfs("turn", "end")
}
