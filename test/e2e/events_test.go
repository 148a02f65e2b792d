package e2e

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// follower collects the event stream in the background.
type follower struct {
	mu     sync.Mutex
	events []ctl.Event
	cancel context.CancelFunc
	done   chan error
}

func follow(t *testing.T, c *ctl.Client, since uint64) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, done: make(chan error, 1)}
	go func() {
		f.done <- c.Events(ctx, since, true, func(e ctl.Event) error {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(f.stop)
	return f
}

func (f *follower) stop() { f.cancel() }

// waitFor waits until an event matching ok arrives.
func (f *follower) waitFor(t *testing.T, what string, ok func(ctl.Event) bool) ctl.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		for _, e := range f.events {
			if ok(e) {
				f.mu.Unlock()
				return e
			}
		}
		f.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no event %s; got %+v", what, f.events)
	return ctl.Event{}
}

// Events stream as they happen, with the process that made each change;
// a client that reconnects with ?since misses nothing.
func TestEvents(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"m.bin": strings.Repeat("x", 8192)})
	w.mount()
	c := ctl.NewClient(w.status().Socket)
	f := follow(t, c, 0)

	w.cowfs("turn", "begin", "--id", "t1", "--anchor", "a1")
	f.waitFor(t, "turn_begin", func(e ctl.Event) bool {
		return e.Type == ctl.EventTurnBegin && e.Turn == 1 && e.ID == "t1" && e.Anchor == "a1"
	})
	w.cowfs("turn", "step", "call-1")
	// A plain shell command: its change carries the shell's pid and name.
	sh := exec.Command("sh", "-c", "echo x > f; echo $$ > pid")
	sh.Dir = w.mnt
	if err := sh.Run(); err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(mustRead(t, w.path("pid")))))
	e := f.waitFor(t, "change to f", func(e ctl.Event) bool { return e.Type == ctl.EventChange && e.Path == "f" })
	if e.Kind != "created" || e.Pid != uint32(pid) || e.Command != "sh" || e.Turn != 1 || e.Step != "call-1" {
		t.Errorf("change event: %+v, want created by sh pid %d in turn 1 step call-1", e, pid)
	}
	// A write through a shared mapping reaches the daemon with pid 0;
	// it is attributed to a process that maps the file.
	unmap := mmapWrite(t, w.path("m.bin"), 10, []byte("MMAP"))
	w.cowfs("turn", "end")
	unmap()
	// (Which process: TestMmapWriterNamed.)
	f.waitFor(t, "mmap write", func(e ctl.Event) bool { return e.Type == ctl.EventChange && e.Path == "m.bin" })
	end := f.waitFor(t, "turn_end", func(e ctl.Event) bool { return e.Type == ctl.EventTurnEnd && e.Turn == 1 })

	w.rollback("1")
	f.waitFor(t, "rollback", func(e ctl.Event) bool {
		return e.Type == ctl.EventRollback && e.Target == 1 && e.Counts != nil && e.Marker != nil && e.Marker.Anchor == "a1"
	})
	w.cowfs("unrevert")
	f.waitFor(t, "unrevert", func(e ctl.Event) bool { return e.Type == ctl.EventUnrevert })

	// Reconnecting after turn_end replays exactly what came after it.
	var replay []ctl.Event
	err := c.Events(context.Background(), end.Seq, false, func(e ctl.Event) error {
		replay = append(replay, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The rollback's per-path changes come first, then its summary.
	if len(replay) < 2 || replay[0].Seq <= end.Seq || replay[0].Rollback == 0 {
		t.Errorf("replay after %d: %+v", end.Seq, replay)
	}
	for i := 1; i < len(replay); i++ {
		if replay[i].Seq <= replay[i-1].Seq {
			t.Errorf("events out of order: %d after %d", replay[i].Seq, replay[i-1].Seq)
		}
	}
	// The CLI prints them too.
	if out := w.cowfs("events"); !strings.Contains(out, "created  f by sh") || !strings.Contains(out, "turn 1 began") {
		t.Errorf("cowfs events:\n%s", out)
	}
}

// Diffs of a turn, of a range and of a step; steps limit show too.
func TestDiffAndSteps(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{
		"a.txt":   "one\ntwo\nthree\n",
		"gone.md": "bye\n",
		"bin":     "\x00\x01\x02",
		"big.txt": strings.Repeat("big line\n", 200000),
	})
	w.mount()
	w.cowfs("turn", "begin")
	w.cowfs("turn", "step", "s1")
	w.sh("sed -i s/two/TWO/ a.txt; rm gone.md")
	w.cowfs("turn", "step", "s2")
	w.sh("printf 'new\\n' > new.txt; printf '\\003' >> bin; echo more >> big.txt")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin")
	w.sh("echo four >> a.txt")
	w.cowfs("turn", "end")

	var d ctl.Diff
	w.cowfsJSON(&d, "diff", "1")
	files := map[string]ctl.DiffFile{}
	for _, f := range d.Files {
		files[string(f.Path)] = f
	}
	if f := files["a.txt"]; f.Status != "modified" || f.Added != 1 || f.Removed != 1 ||
		!strings.Contains(f.Diff, "-two\n+TWO\n") || !strings.Contains(f.Diff, "--- a/a.txt") {
		t.Errorf("a.txt: %+v", f)
	}
	if f := files["gone.md"]; f.Status != "deleted" || !strings.Contains(f.Diff, "-bye") {
		t.Errorf("gone.md: %+v", f)
	}
	if f := files["new.txt"]; f.Status != "created" || !strings.Contains(f.Diff, "+new") {
		t.Errorf("new.txt: %+v", f)
	}
	if f := files["bin"]; !f.Binary || f.Diff != "" {
		t.Errorf("bin: %+v", f)
	}
	if f := files["big.txt"]; !f.TooLarge || f.Diff != "" {
		t.Errorf("big.txt: %+v", f)
	}
	// One step only.
	w.cowfsJSON(&d, "diff", "1", "--step", "s1")
	if len(d.Files) != 2 || d.Files[0].Path != "a.txt" || d.Files[1].Path != "gone.md" {
		t.Errorf("diff of step s1: %+v", d.Files)
	}
	var sh ctl.TurnDetail
	w.cowfsJSON(&sh, "show", "1", "--step", "s2")
	if len(sh.Changes) != 3 {
		t.Errorf("show --step s2: %+v", sh.Changes)
	}
	// From turn 1 to now spans both turns; to turn 2 only the first.
	w.cowfsJSON(&d, "diff", "1", "now")
	for _, f := range d.Files {
		if f.Path == "a.txt" && !strings.Contains(f.Diff, "+four") {
			t.Errorf("diff 1 now misses turn 2: %s", f.Diff)
		}
	}
	w.cowfsJSON(&d, "diff", "1", "2")
	for _, f := range d.Files {
		if f.Path == "a.txt" && strings.Contains(f.Diff, "four") {
			t.Errorf("diff 1 2 includes turn 2: %s", f.Diff)
		}
	}
	// --stat, and plain text off a terminal.
	out := w.cowfs("diff", "1", "--stat")
	if !strings.Contains(out, "a.txt") || !strings.Contains(out, "files changed") {
		t.Errorf("diff --stat:\n%s", out)
	}
	if out := w.cowfs("diff", "1"); strings.Contains(out, "\x1b[") {
		t.Errorf("colored diff off a terminal")
	}
	if out := w.cowfs("diff", "1", "--color", "always"); !strings.Contains(out, "\x1b[32m+") {
		t.Errorf("--color always is not colored")
	}
	if _, _, code := w.run("diff", "1", "--step", "nope"); code != 5 {
		t.Errorf("diff of an unknown step: exit %d", code)
	}
}

// A write through a shared mapping reaches the daemon with pid 0; the
// daemon names a process that maps the file, from /proc — within a
// bound (fs/mapper.go: past it the write is recorded with pid 0 rather
// than held up), which a heavily loaded machine can pass. So the write
// is tried in up to three turns: it must be attributed to this process
// at least once, and never to another.
func TestMmapWriterNamed(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"m.bin": strings.Repeat("x", 8192)})
	w.mount()
	c := ctl.NewClient(w.status().Socket)
	f := follow(t, c, 0)
	for try := 1; try <= 3; try++ {
		w.cowfs("turn", "begin")
		unmap := mmapWrite(t, w.path("m.bin"), 10*try, []byte("MMAP"))
		w.cowfs("turn", "end")
		unmap()
		e := f.waitFor(t, "mmap write", func(e ctl.Event) bool {
			return e.Type == ctl.EventChange && e.Path == "m.bin" && e.Turn == uint64(try)
		})
		switch e.Pid {
		case uint32(os.Getpid()):
			return
		case 0:
			t.Logf("try %d: the mmap write was recorded with pid 0 (the /proc scan took too long)", try)
		default:
			t.Fatalf("mmap write attributed to pid %d (%s), want the mapper %d", e.Pid, e.Command, os.Getpid())
		}
	}
	t.Errorf("the mmap write was never attributed to its mapper %d", os.Getpid())
}
