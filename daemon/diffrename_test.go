package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

// rename journals the rename of from to to (nothing replaced), then
// makes it.
func (td *testDaemon) rename(from, to string) {
	td.t.Helper()
	var st unix.Stat_t
	must(td.t, unix.Lstat(filepath.Join(td.ws, from), &st))
	td.append(&journal.Record{Kind: journal.KindRename, Path: from, Path2: to, Type: st.Mode & syscall.S_IFMT, Ino: td.id(&st)}, nil)
	must(td.t, os.Rename(filepath.Join(td.ws, from), filepath.Join(td.ws, to)))
}

// remove journals the removal of rel, kept aside, then moves it aside.
func (td *testDaemon) remove(rel string) {
	td.t.Helper()
	p := filepath.Join(td.ws, rel)
	var st unix.Stat_t
	must(td.t, unix.Lstat(p, &st))
	name := td.d.area.NewName()
	td.append(&journal.Record{Kind: journal.KindRemove, Path: rel, Type: st.Mode & syscall.S_IFMT, Ino: td.id(&st),
		Aside: name, Attr: journal.AttrOf(&st)}, nil)
	dir, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(td.t, err)
	defer unix.Close(dir)
	must(td.t, td.d.area.MoveIn(dir, filepath.Base(p), name, &st))
}

// TestDiffRenamesInRange (#32, case 3): a diff reads each file's old
// version where the file was when the range began, through renames of
// the file and of its directories inside the range as well as after
// it: a file renamed after its directory moved is "renamed from" its
// first path, not from the path the rename found it at; a file removed
// after its directory moved is diffed against what it held, not called
// created and removed again.
func TestDiffRenamesInRange(t *testing.T) {
	td := newTestDaemon(t)
	for p, c := range map[string]string{"src/a.js": "a0\n", "src/b.js": "b0\n", "src/d/e.js": "e0\n"} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(td.ws, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(td.ws, p), []byte(c), 0o644))
	}
	td.begin() // turn 1
	td.write("src/a.js", "a1\n")
	td.rename("src", "lib")
	td.rename("lib/a.js", "lib/c.js")
	td.remove("lib/b.js")
	td.rename("lib/d", "lib/f")
	td.write("lib/f/e.js", "e1\n")
	td.end()
	td.begin() // turn 2
	td.rename("lib", "top")
	td.end()

	type file struct{ status, from, header, lines string }
	for _, c := range []struct {
		name  string
		req   ctl.DiffRequest
		files map[string]file
	}{
		{"turn 1", ctl.DiffRequest{From: "1"}, map[string]file{
			"lib":        {"renamed", "src", "", ""},
			"lib/c.js":   {"renamed", "src/a.js", "--- a/src/a.js +++ b/lib/c.js", "-a0 +a1"},
			"lib/b.js":   {"deleted", "", "--- a/src/b.js +++ /dev/null", "-b0"},
			"lib/f":      {"renamed", "src/d", "", ""},
			"lib/f/e.js": {"modified", "", "--- a/src/d/e.js +++ b/lib/f/e.js", "-e0 +e1"},
		}},
		{"turn 1 to now", ctl.DiffRequest{From: "1", To: "now"}, map[string]file{
			"top":        {"renamed", "src", "", ""},
			"top/c.js":   {"renamed", "src/a.js", "--- a/src/a.js +++ b/top/c.js", "-a0 +a1"},
			"top/b.js":   {"deleted", "", "--- a/src/b.js +++ /dev/null", "-b0"},
			"top/f":      {"renamed", "src/d", "", ""},
			"top/f/e.js": {"modified", "", "--- a/src/d/e.js +++ b/top/f/e.js", "-e0 +e1"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := td.svc().Diff(context.Background(), c.req)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]ctl.DiffFile{}
			for _, f := range d.Files {
				got[string(f.Path)] = f
			}
			for p, want := range c.files {
				f, ok := got[p]
				if !ok {
					t.Errorf("%s missing: %+v", p, d.Files)
					continue
				}
				if f.Status != want.status || string(f.From) != want.from || headers(f.Diff) != want.header || changedLines(f.Diff) != want.lines {
					t.Errorf("%s: %s from %q %q %q (note %q), want %s from %q %q %q", p, f.Status, f.From, headers(f.Diff), changedLines(f.Diff), f.Note,
						want.status, want.from, want.header, want.lines)
				}
			}
		})
	}
}

// headers is a unified diff's file header lines, space separated.
func headers(diff string) string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, " ")
}
