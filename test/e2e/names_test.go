package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// File names that are hostile to a terminal or are not UTF-8: the CLI
// prints them escaped, JSON carries them exactly, and cat --at and a
// rollback find them by their bytes.
func TestHostileNames(t *testing.T) {
	w := newWorkspace(t)
	const (
		ansi   = "evil-\x1b[2J\x1b[31mred.txt"
		latin1 = "caf\xe9.txt"
		nl     = "two\nlines.txt"
	)
	w.seed(map[string]string{ansi: "a\n", latin1: "b\n", nl: "c\n"})
	w.mount()
	w.cowfs("turn", "begin")
	for _, name := range []string{ansi, latin1, nl} {
		if err := os.WriteFile(w.path(name), []byte("changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.cowfs("turn", "end")

	for _, args := range [][]string{{"show", "1"}, {"rollback", "1", "--dry-run"}, {"events"}, {"diff", "1", "--stat"}} {
		out := w.cowfs(args...)
		if strings.ContainsAny(out, "\x1b\xe9") || strings.Contains(out, "two\nlines") {
			t.Errorf("cowfs %v prints a raw name: %q", args, out)
		}
		if !strings.Contains(out, `\x1b[2J`) {
			t.Errorf("cowfs %v does not show the escaped name: %q", args, out)
		}
	}

	d := w.turn("1")
	got := map[string]bool{}
	for _, c := range d.Changes {
		got[string(c.Path)] = true
	}
	for _, name := range []string{ansi, latin1, nl} {
		if !got[name] {
			t.Errorf("show --json lost %q: %+v", name, d.Changes)
		}
	}
	raw := w.cowfs("show", "1", "--json")
	if !strings.Contains(raw, `caf\udce9.txt`) {
		t.Errorf("a name that is not UTF-8 is not surrogate-escaped in JSON: %s", raw)
	}

	c := ctl.NewClient(w.status().Socket)
	rc, err := c.Content(context.Background(), "1", latin1)
	if err != nil {
		t.Fatalf("content of %q: %v", latin1, err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(b, []byte("b\n")) {
		t.Errorf("content of %q at 1: %q", latin1, b)
	}

	res := w.rollback("1")
	if res.Counts.Restored != 3 {
		t.Errorf("rollback: %+v", res)
	}
	if b, _ := os.ReadFile(w.path(latin1)); string(b) != "b\n" {
		t.Errorf("%q after rollback: %q", latin1, b)
	}
}

// Turn ids and anchors with control characters are refused; paths the
// content endpoint cannot resolve inside the workspace are 4xx with the
// API's error code, never 500.
func TestHostileRequests(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"real/f.txt": "x\n"})
	if err := os.Symlink("real", w.dir+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", w.dir+"/out"); err != nil {
		t.Fatal(err)
	}
	w.mount()
	for _, args := range [][]string{
		{"turn", "begin", "--id", "a\nb"},
		{"turn", "begin", "--anchor", "\x1b[31m"},
		{"turn", "begin", "--id", "bell\x07"},
	} {
		if _, _, code := w.run(args...); code != 2 {
			t.Errorf("cowfs %q: exit %d, want 2 (bad request)", args, code)
		}
	}
	w.cowfs("turn", "begin", "--id", "ok")
	w.cowfs("turn", "end")

	c := ctl.NewClient(w.status().Socket)
	for path, code := range map[string]string{
		"link/f.txt":   ctl.CodeBadRequest, // through a symlink
		"out/passwd":   ctl.CodeBadRequest, // through a symlink out of the workspace
		"../x":         ctl.CodeBadRequest,
		"a\x00b":       ctl.CodeBadRequest,
		"missing.txt":  ctl.CodeNotFound,
		"real/f.txt/x": ctl.CodeNotFound,
		".cowfs/id":    ctl.CodeNotFound,
	} {
		rc, err := c.Content(context.Background(), "1", path)
		if err == nil {
			rc.Close()
			t.Errorf("content of %q: no error", path)
			continue
		}
		if !errors.Is(err, &ctl.Error{Code: code}) {
			t.Errorf("content of %q: %v, want %s", path, err, code)
		}
	}
}
