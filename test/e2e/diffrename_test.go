package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

// renameShape is one way a later turn moves the files an earlier turn
// changed: the file itself, its parent, its grand-parent, or its parent
// exchanged with another directory (RENAME_EXCHANGE).
type renameShape struct {
	name string
	base string // the directory holding the files turn t1 changes
	// rename is turn t2's work, done through the mount.
	rename func(w *workspace)
	// now maps a path as t1 left it to where its object (or, for a
	// removed file, the path that followed its parent) is now.
	now func(p string) string
}

func renameShapes() []renameShape {
	prefix := func(from, to string) func(string) string {
		return func(p string) string {
			if p == from || strings.HasPrefix(p, from+"/") {
				return to + p[len(from):]
			}
			return p
		}
	}
	return []renameShape{
		{"file", "src", func(w *workspace) { w.sh("mv src/a.js src/A.js; mv src/n.js src/N.js") },
			func(p string) string {
				if q, ok := map[string]string{"src/a.js": "src/A.js", "src/n.js": "src/N.js"}[p]; ok {
					return q
				}
				return p
			}},
		{"parent", "src", func(w *workspace) { w.sh("mv src lib") }, prefix("src", "lib")},
		{"grand-parent", "top/src", func(w *workspace) { w.sh("mv top up") }, prefix("top", "up")},
		{"exchange", "src", func(w *workspace) {
			if err := unix.Renameat2(unix.AT_FDCWD, w.path("src"), unix.AT_FDCWD, w.path("other"), unix.RENAME_EXCHANGE); err != nil {
				w.t.Fatal(err)
			}
		}, func(p string) string {
			if q := prefix("src", "other")(p); q != p {
				return q
			}
			return prefix("other", "src")(p)
		}},
	}
}

// Reproduction 3 of #32: rm src/b.js in turn t1, mv src lib in turn t2,
// then `cowfs diff t1` failed with "not_found: src/b.js: open lib/b.js",
// and `diff t1 now` called lib/b.js created and removed again. What a
// turn changed, and what a path held when a turn began, are read
// through every later rename — of the file, its parent, its
// grand-parent, an exchange — by diff (the CLI, the socket, one step,
// to a later turn, to now, and with no daemon), cat --at and fsck
// --export.
func TestDiffThroughLaterRenames(t *testing.T) {
	for _, shape := range renameShapes() {
		t.Run(shape.name, func(t *testing.T) { testDiffThroughRenames(t, shape) })
	}
}

func testDiffThroughRenames(t *testing.T, shape renameShape) {
	w := newWorkspace(t)
	b := shape.base
	w.seed(map[string]string{b + "/a.js": "a0\n", b + "/b.js": "b0\n", b + "/keep.js": "k\n", "other/o.js": "o0\n"})
	w.mount()
	w.cowfs("turn", "begin", "--id", "t1")
	w.cowfs("turn", "step", "s1")
	w.sh("cd " + b + " && sed -i s/a0/a1/ a.js && rm b.js && echo n1 > n.js")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin", "--id", "t2")
	shape.rename(w)
	w.cowfs("turn", "end")

	// The files turn t1 changed, and the lines of their diff: at the
	// paths t1 left them at (diff t1), and where they are now.
	type want struct{ status, lines string }
	t1 := map[string]want{
		b + "/a.js": {"modified", "-a0 +a1"},
		b + "/b.js": {"deleted", "-b0"},
		b + "/n.js": {"created", "+n1"},
	}
	check := func(what string, d ctl.Diff, now bool) {
		t.Helper()
		got := map[string]ctl.DiffFile{}
		for _, f := range d.Files {
			got[string(f.Path)] = f
		}
		for p, wf := range t1 {
			if now {
				p = shape.now(p)
			}
			f, ok := got[p]
			if !ok {
				t.Errorf("%s: %s missing from %+v", what, p, d.Files)
				continue
			}
			if diffLines(f.Diff) != wf.lines || f.Note != "" {
				t.Errorf("%s: %s %s %q (note %q), want the lines %q\n%s", what, p, f.Status, diffLines(f.Diff), f.Note, wf.lines, f.Diff)
			}
			// Moved since, a modified file is also renamed (file shape).
			if f.Status != wf.status && !(now && f.Status == "renamed" && wf.status == "modified") {
				t.Errorf("%s: %s is %s, want %s", what, p, f.Status, wf.status)
			}
		}
	}
	var d ctl.Diff
	w.cowfsJSON(&d, "diff", "t1")
	check("diff t1", d, false)
	w.cowfsJSON(&d, "diff", "t1", "--step", "s1")
	check("diff t1 --step s1", d, false)
	w.cowfsJSON(&d, "diff", "t1", "t2")
	check("diff t1 t2", d, false)
	w.cowfsJSON(&d, "diff", "t1", "now")
	check("diff t1 now", d, true)
	w.cowfsJSON(&d, "diff", "t2")
	for _, f := range d.Files {
		if f.Added != 0 || f.Removed != 0 {
			t.Errorf("diff t2, a rename: %s %s +%d -%d\n%s", f.Path, f.Status, f.Added, f.Removed, f.Diff)
		}
	}
	c := ctl.NewClient(w.status().Socket)
	d, err := c.Diff(context.Background(), ctl.DiffRequest{From: "t1"})
	if err != nil {
		t.Fatalf("GET /v1/diff?from=t1: %v", err)
	}
	check("GET /v1/diff?from=t1", d, false)

	// What each path held when each turn began ("-": nothing), through
	// the CLI and the socket.
	at := map[string]map[string]string{
		"t1": {b + "/a.js": "a0\n", b + "/b.js": "b0\n", b + "/n.js": "-", b + "/keep.js": "k\n", "other/o.js": "o0\n"},
		"t2": {b + "/a.js": "a1\n", b + "/b.js": "-", b + "/n.js": "n1\n", b + "/keep.js": "k\n", "other/o.js": "o0\n"},
	}
	for p := range at["t1"] {
		if q := shape.now(p); q != p && at["t1"][q] == "" {
			at["t1"][q], at["t2"][q] = "-", "-" // nothing was at the new names then
		}
	}
	for turn, files := range at {
		for p, content := range files {
			out, errOut, code := w.run("cat", "--at", turn, p)
			switch {
			case content == "-" && code != 5:
				t.Errorf("cat --at %s %s: exit %d, %q %s; want not found (5)", turn, p, code, out, errOut)
			case content != "-" && (code != 0 || out != content):
				t.Errorf("cat --at %s %s: exit %d, %q %s; want %q", turn, p, code, out, errOut, content)
			}
			rc, err := c.Content(context.Background(), turn, p)
			var ce *ctl.Error
			switch {
			case content == "-" && !(errors.As(err, &ce) && ce.Code == ctl.CodeNotFound):
				t.Errorf("GET /v1/content?at=%s&path=%s: %v, want not_found", turn, p, err)
			case content != "-" && err != nil:
				t.Errorf("GET /v1/content?at=%s&path=%s: %v", turn, p, err)
			case err == nil:
				got, _ := io.ReadAll(rc)
				rc.Close()
				if content != "-" && string(got) != content {
					t.Errorf("GET /v1/content?at=%s&path=%s: %q, want %q", turn, p, got, content)
				}
			}
		}
	}

	// With no daemon, the CLI reads the journal itself: the same diff.
	w.umount()
	w.cowfsJSON(&d, "diff", "t1")
	check("diff t1, no daemon", d, false)

	// The export holds, for each path, what it held when the latest
	// turn that changed it began: the same as cat --at says.
	dir := filepath.Join(t.TempDir(), "export")
	if out, errOut, code := w.run("fsck", "--export", dir); code != 0 {
		t.Fatalf("fsck --export: exit %d: %s %s", code, out, errOut)
	}
	var idx []daemon.ExportedPath
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil || json.Unmarshal(raw, &idx) != nil {
		t.Fatalf("index.json: %v: %s", err, raw)
	}
	seen := map[string]bool{}
	for _, e := range idx {
		p := string(e.Path)
		turn := map[uint64]string{1: "t1", 2: "t2"}[e.Turn]
		content, known := at[turn][p]
		if !known {
			continue // a directory
		}
		seen[p] = true
		got := "-"
		switch e.State {
		case "file":
			b, _ := os.ReadFile(filepath.Join(dir, e.File))
			got = string(b)
		case "absent":
		default:
			got = e.State + " " + e.Problem
		}
		if got != content {
			t.Errorf("export: %s at %s: %q, want %q", p, turn, got, content)
		}
	}
	for p := range t1 {
		if !seen[p] {
			t.Errorf("export: %s missing: %s", p, raw)
		}
	}
}

// diffLines returns a unified diff's +/- lines, without its headers,
// joined by spaces.
func diffLines(diff string) string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}
