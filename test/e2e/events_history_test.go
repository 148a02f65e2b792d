package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// events returns the events after since.
func (w *workspace) events(since uint64) []ctl.Event {
	w.t.Helper()
	var out []ctl.Event
	err := ctl.NewClient(w.status().Socket).Events(context.Background(), since, false, func(e ctl.Event) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// lastSeq is the seq of the latest event.
func (w *workspace) lastSeq() uint64 {
	w.t.Helper()
	evs := w.events(0)
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// changeLines renders change events as "kind path" or "kind from>path",
// sorted, with the process or rollback that made them.
func changeLines(evs []ctl.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type != ctl.EventChange {
			continue
		}
		l := e.Kind + " "
		if e.From != "" {
			l += string(e.From) + ">"
		}
		l += string(e.Path)
		if e.Rollback != 0 {
			l += fmt.Sprintf(" rollback=%d", e.Rollback)
		}
		if e.Pid != 0 {
			l += " pid"
		}
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// Rollback (undo) and unrevert (redo) emit one change event per path
// they touch — restored, recovered, deleted, moved back — with the
// rollback's id and no process, before their summary event, so a
// mirror fed by events stays right.
func TestEventsOfRollbackPerPath(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a": "a\n", "b": "b\n", "d": "d\n", "keep": "k\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo A >> a; rm b; echo c > c; mv d e; mkdir nd; echo f > nd/f")
	w.cowfs("turn", "end")

	since := w.lastSeq()
	var res ctl.RollbackResult
	w.cowfsJSON(&res, "undo")
	evs := w.events(since)
	rb := strconv.FormatUint(res.Rollback, 10)
	sameLines(t, "events of the undo", changeLines(evs), []string{
		"restored a rollback=" + rb, "recovered b rollback=" + rb, "deleted c rollback=" + rb,
		"moved e>d rollback=" + rb, "deleted nd rollback=" + rb, "deleted nd/f rollback=" + rb,
	})
	if n := len(evs); n == 0 || evs[n-1].Type != ctl.EventRollback || evs[n-1].Rollback != res.Rollback {
		t.Errorf("the undo's summary does not come last: %+v", evs)
	}

	since = w.lastSeq()
	w.cowfsJSON(&res, "redo")
	evs = w.events(since)
	sameLines(t, "events of the redo", changeLines(evs), []string{
		"restored a rollback=" + rb, "deleted b rollback=" + rb, "recovered c rollback=" + rb,
		"moved d>e rollback=" + rb, "recovered nd rollback=" + rb, "recovered nd/f rollback=" + rb,
	})
	if n := len(evs); n == 0 || evs[n-1].Type != ctl.EventUnrevert {
		t.Errorf("the redo's summary does not come last: %+v", evs)
	}

	// rollback N says the same as undo; the CLI names the rollback.
	since = w.lastSeq()
	w.rollback("1")
	if got := changeLines(w.events(since)); len(got) != 6 {
		t.Errorf("events of rollback 1: %q", got)
	}
	if out := w.cowfs("events", "--since", strconv.FormatUint(since, 10)); !strings.Contains(out, "restored a by rollback") {
		t.Errorf("cowfs events after a rollback:\n%s", out)
	}
}

// A mv through the mount is one event, moved, from the old path to the
// new: onto a new name, over an existing file, into a directory, of a
// directory, and of a file created in the same turn.
func TestEventsMoveIsOneEvent(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"x": "x", "y": "y", "z": "z", "existing": "e", "sub/keep": "k", "dir/f": "f"})
	w.mount()
	w.cowfs("turn", "begin")
	since := w.lastSeq()
	w.sh("mv x x2; mv y existing; mv z sub/z; mv dir dir2; echo n > new; mv new new2")
	w.cowfs("turn", "end")
	sameLines(t, "events of the moves", changeLines(w.events(since)), []string{
		"moved x>x2 pid", "moved y>existing pid", "moved z>sub/z pid", "moved dir>dir2 pid",
		"created new pid", "moved new>new2 pid",
	})
}

// After exec, changes are blamed on the new program, even when the
// exec follows the shell's own change at once.
func TestEventsNameExecdProgram(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	w.cowfs("turn", "begin")
	since := w.lastSeq()
	for i := 0; i < 3; i++ { // each time, on the first try too
		cmd := exec.Command("sh", "-c", fmt.Sprintf("echo $$ > pid%d; echo x > a%d; exec cp a%d b%d", i, i, i, i))
		cmd.Dir = w.mnt
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	w.cowfs("turn", "end")
	by := map[string]ctl.Event{}
	for _, e := range w.events(since) {
		if e.Type == ctl.EventChange && e.Kind == "created" {
			by[string(e.Path)] = e
		}
	}
	for i := 0; i < 3; i++ {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(mustRead(t, w.path(fmt.Sprintf("pid%d", i))))))
		a, b := by[fmt.Sprintf("a%d", i)], by[fmt.Sprintf("b%d", i)]
		if a.Command != "sh" || b.Command != "cp" || b.Pid != uint32(pid) {
			t.Errorf("round %d: a%d by %s (pid %d), b%d by %s (pid %d); want sh, then cp, both pid %d",
				i, i, a.Command, a.Pid, i, b.Command, b.Pid, pid)
		}
	}
}

// `cowfs events --json` prints one compact JSON object per line, as
// its help says (NDJSON).
func TestEventsJSONIsNDJSON(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo x > f; mv f g")
	w.cowfs("turn", "end")
	out := w.cowfs("events", "--json")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(w.events(0)) {
		t.Errorf("%d lines for %d events:\n%s", len(lines), len(w.events(0)), out)
	}
	for _, l := range lines {
		var e ctl.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Seq == 0 || e.Type == "" {
			t.Errorf("line %q is not an event: %v", l, err)
		}
	}
}

// A rollback a crash interrupted, finished when the daemon starts
// again, has its events too.
func TestEventsOfRollbackFinishedAfterCrash(t *testing.T) {
	w := newWorkspace(t)
	files := map[string]string{}
	for i := 0; i < 30; i++ {
		files[fmt.Sprintf("f%02d", i)] = "before\n"
	}
	w.seed(files)
	paused, _ := w.pauseRollbacks(5)
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("for f in f*; do echo after > $f; done")
	w.cowfs("turn", "end")
	since := w.lastSeq()
	pid := w.status().Pid

	w.killDuringRollback(pid, paused, "1")
	w.daemonEnv = nil
	w.pids = nil
	w.mount()

	evs := w.events(since)
	var want []string
	for i := 0; i < 30; i++ {
		want = append(want, fmt.Sprintf("restored f%02d rollback=1", i))
	}
	sameLines(t, "events of the finished rollback", changeLines(evs), want)
	if n := len(evs); n == 0 || evs[n-1].Type != ctl.EventRollback || evs[n-1].Marker == nil {
		t.Errorf("no rollback summary after the restart: %+v", evs)
	}
}
