package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/rescan"
	"github.com/cowfs/cowfs/rollback"
)

// TestContent: cat --at reads a file as it was when a turn began, and
// refuses paths outside the workspace or in cowfs's private directory.
func TestContent(t *testing.T) {
	td := newTestDaemon(t)
	must(t, os.WriteFile(filepath.Join(td.ws, "b.txt"), []byte("b0\n"), 0o644))
	td.begin()
	td.write("b.txt", "b1\n")
	td.create("a.txt", "a\n")
	td.end()
	td.begin()
	td.write("b.txt", "b2\n")
	td.end()
	for _, c := range []struct{ at, path, want string }{
		{"1", "b.txt", "b0\n"},
		{"2", "b.txt", "b1\n"},
		{"2", "a.txt", "a\n"},
		{"2", "./x/../b.txt", "b1\n"},
	} {
		rc, err := td.svc().Content(context.Background(), c.at, c.path)
		if err != nil {
			t.Errorf("Content(%s, %s): %v", c.at, c.path, err)
			continue
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != c.want {
			t.Errorf("Content(%s, %s) = %q, want %q", c.at, c.path, b, c.want)
		}
	}
	for _, c := range []struct{ at, path, code string }{
		{"1", "a.txt", ctl.CodeNotFound}, // did not exist yet
		{"1", "../outside", ctl.CodeBadRequest},
		{"1", "/etc/passwd", ctl.CodeBadRequest},
		{"1", ".cowfs/aside", ctl.CodeNotFound},
		{"7", "b.txt", ctl.CodeNotFound},
	} {
		_, err := td.svc().Content(context.Background(), c.at, c.path)
		var ce *ctl.Error
		if !errors.As(err, &ce) || ce.Code != c.code {
			t.Errorf("Content(%s, %q) = %v, want code %s", c.at, c.path, err, c.code)
		}
	}
}

// TestResumeNotes: a daemon starting after a crash in a rollback
// finishes it (with the rescanner wired as Start wires it) and says so.
func TestResumeNotes(t *testing.T) {
	td := newTestDaemon(t)
	d := td.d
	var err error
	d.scanner, err = rescan.New(d.j, d.tree, d.rootDev, nil)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(td.ws, "b.txt"), []byte("b0\n"), 0o644))
	td.begin()
	td.write("b.txt", "b1\n")
	td.create("a.txt", "a\n")
	td.end()
	turn, err := d.j.FindTurn("1")
	must(t, err)

	type crash struct{}
	d.afterStep = func(n int) {
		if n == 1 {
			panic(crash{})
		}
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("the rollback did not stop")
			}
		}()
		rollback.Rollback(d.env(), turn, false, false)
	}()
	d.afterStep = nil
	must(t, d.resume())
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "finished rollback 1 to before turn 1, interrupted by a crash") {
		t.Errorf("notes: %q", d.Notes)
	}
	if b, _ := os.ReadFile(filepath.Join(td.ws, "b.txt")); string(b) != "b0\n" {
		t.Errorf("b.txt = %q after the resumed rollback", b)
	}
	if _, err := os.Stat(filepath.Join(td.ws, "a.txt")); err == nil {
		t.Errorf("a.txt is still there")
	}
}

// TestPauseHook: COWFS_TEST_ROLLBACK_PAUSE is parsed strictly.
func TestPauseHook(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "3:/tmp/x": true, "0:/tmp/x": false, "3:rel": false, "x:/tmp": false, "3": false} {
		t.Setenv(pauseEnv, v)
		h, err := pauseHook()
		if (err == nil) != ok {
			t.Errorf("%s=%q: %v", pauseEnv, v, err)
		}
		if ok && (h == nil) != (v == "") {
			t.Errorf("%s=%q: hook %v", pauseEnv, v, h != nil)
		}
	}
}
