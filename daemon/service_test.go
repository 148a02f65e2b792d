package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
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

// TestTurnSummaries: a turn lists the paths it changed (one step's
// only, if asked), never cowfs's private directory; the turn list
// counts paths changed outside turns; turns are found by number or id.
func TestTurnSummaries(t *testing.T) {
	td := newTestDaemon(t)
	must(t, os.WriteFile(filepath.Join(td.ws, "b.txt"), []byte("b0\n"), 0o644))
	td.begin()
	td.step("s1")
	td.create("a.txt", "a\n")
	td.step("s2")
	td.write("b.txt", "b1\n")
	td.append(&journal.Record{Kind: journal.KindCreate, Path: ".cowfs/aside/x", Type: syscall.S_IFREG}, nil)
	td.end()
	td.write("b.txt", "between turns\n")
	td.create("c.txt", "c\n")

	paths := func(d ctl.TurnDetail) string {
		var out []string
		for _, c := range d.Changes {
			out = append(out, string(c.Path)+":"+c.Kind)
		}
		return strings.Join(out, " ")
	}
	ctx := context.Background()
	for _, c := range []struct{ ref, step, want string }{
		{"1", "", "a.txt:created b.txt:modified"},
		{"1", "s1", "a.txt:created"},
		{"1", "s2", "b.txt:modified"},
		{"1", "none", ""},
	} {
		d, err := td.svc().Turn(ctx, c.ref, c.step)
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(d); got != c.want {
			t.Errorf("turn %s step %q: %s, want %s", c.ref, c.step, got, c.want)
		}
	}
	list, err := td.svc().Turns(ctx)
	must(t, err)
	if len(list.Turns) != 1 || list.Turns[0].State != ctl.StateClosed || list.OutsideTurns != 2 {
		t.Errorf("turns: %+v", list)
	}
	var ce *ctl.Error
	if _, err := td.svc().Turn(ctx, "2", ""); !errors.As(err, &ce) || ce.Code != ctl.CodeNotFound {
		t.Errorf("turn 2: %v", err)
	}
}

// TestTurnRefs: a reference that reads as a number is a turn number or
// bad_request, whatever the request (show, cat --at, diff, rollback):
// never looked up as an id, never not_found. Decimal digits with
// leading zeros are the turn's number.
func TestTurnRefs(t *testing.T) {
	td := newTestDaemon(t)
	must(t, os.WriteFile(filepath.Join(td.ws, "b.txt"), []byte("b0\n"), 0o644))
	td.begin()
	td.write("b.txt", "b1\n")
	td.end()
	ctx := context.Background()
	code := func(err error) string {
		var ce *ctl.Error
		if errors.As(err, &ce) {
			return ce.Code
		}
		if err != nil {
			return "internal"
		}
		return ""
	}
	for _, c := range []struct{ ref, code string }{
		{"1", ""},
		{"01", ""},
		{"2", ctl.CodeNotFound},
		{"no-such-id", ctl.CodeNotFound},
		{"99999999999999999999", ctl.CodeBadRequest},
		{"-1", ctl.CodeBadRequest},
		{"+1", ctl.CodeBadRequest},
		{"0x1", ctl.CodeBadRequest},
		{"1e0", ctl.CodeBadRequest},
		{"1.0", ctl.CodeBadRequest},
	} {
		_, err := td.svc().Turn(ctx, c.ref, "")
		if got := code(err); got != c.code {
			t.Errorf("Turn(%q): %v, want code %q", c.ref, err, c.code)
		}
		rc, err := td.svc().Content(ctx, c.ref, "b.txt")
		if rc != nil {
			rc.Close()
		}
		if got := code(err); got != c.code {
			t.Errorf("Content(%q): %v, want code %q", c.ref, err, c.code)
		}
		_, err = td.svc().Diff(ctx, ctl.DiffRequest{From: ctl.TurnRef(c.ref)})
		if got := code(err); got != c.code {
			t.Errorf("Diff(%q): %v, want code %q", c.ref, err, c.code)
		}
		if c.code != "" {
			_, err = td.svc().Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(c.ref), DryRun: true})
			if got := code(err); got != c.code {
				t.Errorf("Rollback(%q): %v, want code %q", c.ref, err, c.code)
			}
		}
	}
	if _, err := td.svc().Diff(ctx, ctl.DiffRequest{From: "1", To: "0x1"}); code(err) != ctl.CodeBadRequest {
		t.Errorf("Diff to 0x1: %v, want bad_request", err)
	}
}

// TestOutOfWindowRange: a turn that left the window is out_of_window,
// and the error names the reachable range in fields of its own (oldest,
// latest), for clients that must not parse the message.
func TestOutOfWindowRange(t *testing.T) {
	td := newTestDaemon(t)
	for i := 0; i < journal.DefaultWindow+2; i++ {
		td.begin()
		td.end()
	}
	must(t, td.d.j.Prune(func(string) error { return nil }))
	ctx := context.Background()
	for _, ref := range []string{"1", "2"} {
		_, err := td.svc().Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(ref), DryRun: true})
		var ce *ctl.Error
		if !errors.As(err, &ce) || ce.Code != ctl.CodeOutOfWindow {
			t.Fatalf("rollback to %s: %v, want out_of_window", ref, err)
		}
		if ce.Oldest != 3 || ce.Latest != journal.DefaultWindow+2 {
			t.Errorf("rollback to %s: oldest %d, latest %d; want 3 and %d", ref, ce.Oldest, ce.Latest, journal.DefaultWindow+2)
		}
	}
}
