package rollback

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

// threeTurns makes turns 1 to 3, each writing s and creating a file,
// and returns the workspace before each turn and after the last.
func threeTurns(w *ws) (before []string, after string) {
	w.put("s", "0000")
	for i := 1; i <= 3; i++ {
		before = append(before, w.snapshot())
		w.turn(func() {
			w.write("s", int64(i), fmt.Sprint(i))
			w.create(fmt.Sprintf("f%d", i), fmt.Sprint(i))
		})
	}
	return before, w.snapshot()
}

// reverted returns turn -> the rollback that reverted it.
func (w *ws) reverted() map[uint64]uint64 {
	w.t.Helper()
	ts, err := w.j.Turns()
	if err != nil {
		w.t.Fatal(err)
	}
	m := map[uint64]uint64{}
	for _, t := range ts {
		m[t.Num] = t.RevertedBy
	}
	return m
}

// markers returns turn -> the rollback whose marker stands for it.
func (w *ws) markers() map[uint64]uint64 {
	w.t.Helper()
	ms, err := w.j.Markers()
	if err != nil {
		w.t.Fatal(err)
	}
	m := map[uint64]uint64{}
	for _, mk := range ms {
		m[mk.Turn] = mk.Rollback
	}
	return m
}

func wantMap(t *testing.T, what string, got, want map[uint64]uint64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestStackedRollbacks: rollbacks to before turns 2, 1, then 2 again
// stack: the last brings turn 1 back, turn states and markers follow
// the top of the stack (its marker alone stands: the one before 1
// replaced the one before 2), and unreverts pop it in order.
func TestStackedRollbacks(t *testing.T) {
	w := newWS(t)
	before, after := threeTurns(w)

	r1 := w.rollback(w.turnNum(2), false)
	w.same("rolled back to before turn 2", before[1])
	r2 := w.rollback(w.turnNum(1), false)
	w.same("rolled back to before turn 1", before[0])
	wantMap(t, "reverted after rollbacks 2, 1", w.reverted(), map[uint64]uint64{1: r2.Rollback, 2: r2.Rollback, 3: r2.Rollback})
	wantMap(t, "markers after rollbacks 2, 1", w.markers(), map[uint64]uint64{1: r2.Rollback})

	r3 := w.rollback(w.turnNum(2), false)
	w.same("rolled back to before turn 2 again", before[1])
	wantReport(t, "the third rollback", r3.Report, "f1 recover", "s restore")
	wantMap(t, "reverted after rollbacks 2, 1, 2", w.reverted(), map[uint64]uint64{1: 0, 2: r3.Rollback, 3: r3.Rollback})
	wantMap(t, "markers after rollbacks 2, 1, 2", w.markers(), map[uint64]uint64{2: r3.Rollback})

	if un := w.unrevert(false); un.Rollback != r3.Rollback {
		t.Errorf("unreverted rollback %d, want %d", un.Rollback, r3.Rollback)
	}
	w.same("after unreverting the third", before[0])
	wantMap(t, "markers after one unrevert", w.markers(), map[uint64]uint64{1: r2.Rollback})
	w.unrevert(false)
	wantMap(t, "markers after two unreverts", w.markers(), map[uint64]uint64{2: r1.Rollback})
	w.same("after unreverting the second", before[1])
	w.unrevert(false)
	w.same("after unreverting all", after)
	wantMap(t, "reverted after unreverting all", w.reverted(), map[uint64]uint64{1: 0, 2: 0, 3: 0})
	wantMap(t, "markers after unreverting all", w.markers(), map[uint64]uint64{})
	if _, err := Unrevert(w.env, false); !errorsIs(err, ErrNothingToUnrevert) {
		t.Errorf("a fourth unrevert: %v", err)
	}
	if got := w.asideEntries(); len(got) != 0 {
		t.Errorf("aside area holds %v, want nothing: every rollback was undone", got)
	}
}

// crash is what the AfterStep hook panics with to stop a run as a
// crash would, at an exact step.
type crash struct{}

// crashAfter runs fn with env's AfterStep set to stop the run after
// step n, and reports whether it stopped there.
func crashAfter(w *ws, n int, fn func()) (crashed bool) {
	w.env.AfterStep = func(step int) {
		if step == n {
			panic(crash{})
		}
	}
	defer func() {
		w.env.AfterStep = nil
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	fn()
	return false
}

// crashSetup is what crashTurn changes.
func crashSetup(w *ws) {
	w.put("data", "0123456789")
	w.put("gone", "removed by the turn")
	w.put("renamed", "moved by the turn")
	w.put("target", "replaced by the turn")
	w.put("x1", "exchanged 1")
	w.put("x2", "exchanged 2")
	w.putDir("dir")
}

// crashTurn is a turn with one change of each kind, so a rollback of it
// has many steps.
func crashTurn(w *ws) journal.Turn {
	return w.turn(func() {
		w.write("data", 2, "abc")
		w.truncate("data", 4)
		w.chmod("data", 0o600)
		w.remove("gone")
		w.rename("renamed", "dir/renamed", 0)
		w.create("new", "new")
		w.rename("new", "target", 0)
		w.rename("x1", "x2", 2) // RENAME_EXCHANGE
		w.mkdir("tree")
		w.create("tree/f", "f")
		w.symlink("f", "tree/l")
		w.link("data", "dir/data")
		w.setxattr("x1", "user.test", []byte("v"))
	})
}

// TestResumeAfterCrash: a rollback (or an unrevert) interrupted after
// any step is finished by Resume after a restart, from its stored plan,
// with the same result as a run that was not interrupted.
func TestResumeAfterCrash(t *testing.T) {
	// Count the steps of the rollback.
	w := newWS(t)
	crashSetup(w)
	t1 := crashTurn(w)
	steps := 0
	w.env.AfterStep = func(n int) { steps = n }
	want := actions(w.rollback(t1, false).Report)
	if steps < 10 {
		t.Fatalf("the rollback has %d steps; the turn should make more", steps)
	}
	unrevertSteps := 0
	w.env.AfterStep = func(n int) { unrevertSteps = n }
	wantUnrevert := actions(w.unrevert(false).Report)
	w.env.AfterStep = nil
	for n := 1; n < steps; n++ {
		t.Run(fmt.Sprintf("rollback after step %d", n), func(t *testing.T) {
			w := newWS(t)
			crashSetup(w)
			before := w.snapshot()
			t1 := crashTurn(w)
			after := w.snapshot()
			if !crashAfter(w, n, func() { Rollback(w.env, t1, false, false) }) {
				t.Fatal("the rollback did not reach the step")
			}
			w.restart(w.opts)
			outs, err := Resume(w.env)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 1 || !outs[0].Complete || outs[0].Marker == nil {
				t.Fatalf("resume: %+v", outs)
			}
			if got := actions(outs[0].Report); got != want {
				t.Errorf("the resumed rollback reported\n%s\nan uninterrupted one\n%s", got, want)
			}
			w.same("after the resumed rollback", before)
			if outs, err := Resume(w.env); err != nil || len(outs) != 0 {
				t.Errorf("a second resume: %v, %v", outs, err)
			}
			w.unrevert(false)
			w.same("after unreverting the resumed rollback", after)
		})
		if n >= unrevertSteps {
			continue
		}
		t.Run(fmt.Sprintf("unrevert after step %d", n), func(t *testing.T) {
			w := newWS(t)
			crashSetup(w)
			t1 := crashTurn(w)
			after := w.snapshot()
			w.rollback(t1, false)
			if !crashAfter(w, n, func() { Unrevert(w.env, false) }) {
				t.Fatal("the unrevert did not reach the step")
			}
			w.restart(w.opts)
			outs, err := Resume(w.env)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 1 || !outs[0].Complete {
				t.Fatalf("resume: %+v", outs)
			}
			if got := actions(outs[0].Report); got != wantUnrevert {
				t.Errorf("the resumed unrevert reported\n%s\nan uninterrupted one\n%s", got, wantUnrevert)
			}
			w.same("after the resumed unrevert", after)
			if rbs, _ := w.j.Rollbacks(); len(rbs) != 0 {
				t.Errorf("rollbacks left after the unrevert: %+v", rbs)
			}
		})
	}
}

// TestPartialRollbackNoSpace: a rollback whose undo record cannot be
// journaled (the journal's filesystem is at its reserve) stops at that
// step, partial: no marker, no turn reverted, a failure that says why,
// and nothing else that changes history until it is retried or undone.
// Retried once space is back, it finishes.
func TestPartialRollbackNoSpace(t *testing.T) {
	w := newWS(t)
	w.put("f", "original")
	before := w.snapshot()
	t1 := w.turn(func() { w.write("f", 0, "TURN"); w.create("n", "n") })
	after := w.snapshot()

	w.restart(journal.Options{Reserve: 1 << 62})
	out, err := Rollback(w.env, t1, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if out.Complete || out.Marker != nil || !strings.Contains(out.Failure, "no space") {
		t.Fatalf("outcome: %+v", out)
	}
	w.same("after a rollback that could journal nothing", after)
	for _, a := range out.Report {
		if a.Action != Skip || !(strings.HasPrefix(a.Reason, "failed: ") || strings.HasPrefix(a.Reason, "not done: ")) {
			t.Errorf("report of a partial rollback: %+v", a)
		}
	}
	if out.Counts.Skipped != len(out.Report) {
		t.Errorf("counts %+v", out.Counts)
	}
	wantMap(t, "reverted by a partial rollback", w.reverted(), map[uint64]uint64{1: 0})
	wantMap(t, "markers of a partial rollback", w.markers(), map[uint64]uint64{})

	t2 := w.turnNum(1)
	t2.Num = 7 // another target
	if _, err := Rollback(w.env, t2, false, false); !errorsIs(err, journal.ErrPartial) {
		t.Errorf("another rollback while one is partial: %v, want ErrPartial", err)
	}

	w.restart(journal.Options{Reserve: 1 << 20})
	dry, err := Rollback(w.env, t1, false, true)
	if err != nil || !dry.DryRun {
		t.Fatalf("dry run of the retry: %+v, %v", dry, err)
	}
	out, err = Rollback(w.env, t1, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Complete || out.Marker == nil || out.Failure != "" {
		t.Fatalf("retried: %+v", out)
	}
	wantReport(t, "the retried rollback", out.Report, "f restore", "n delete")
	w.same("after the retried rollback", before)
	w.unrevert(false)
	w.same("after the unrevert", after)
}

// TestPartialRollbackMidway: a rollback whose step fails for a reason
// other than a conflict (here the file turns immutable behind cowfs's
// back while it runs: the hook acts after step 2) stops there. The
// steps done stay done; the report says which paths are not done. Once
// the cause is gone the retry finishes; an unrevert instead undoes what
// the partial run did.
func TestPartialRollbackMidway(t *testing.T) {
	for _, finish := range []string{"retry", "unrevert"} {
		t.Run(finish, func(t *testing.T) {
			w := newWS(t)
			before, t1 := twoFileTurn(w)
			after := w.snapshot()
			var clear func()
			w.env.AfterStep = func(step int) {
				if step == 2 { // y/g's steps are done
					clear = immutable(t, w.abs("x/f"))
				}
			}
			out := w.rollback(t1, false)
			w.env.AfterStep = nil
			if out.Complete || !strings.Contains(out.Failure, "x/f") {
				t.Fatalf("outcome: %+v", out)
			}
			if got := w.read("y/g"); got != "yyyy" {
				t.Errorf("y/g = %q: the steps before the failure stay done", got)
			}
			if got := w.read("x/f"); got != "Xxxx" {
				t.Errorf("x/f = %q after its step failed", got)
			}
			wantReport(t, "partial", out.Report, "x/f skip (failed: "+out.Failure+")", "y/g restore")

			clear()
			switch finish {
			case "retry":
				out = w.rollback(t1, false)
				if !out.Complete {
					t.Fatalf("retried: %+v", out)
				}
				wantReport(t, "retried", out.Report, "x/f restore", "y/g restore")
				w.same("after the retry", before)
			case "unrevert":
				w.unrevert(false)
				w.same("after unreverting the partial rollback", after)
				if err := w.j.CheckNoPartial(); err != nil {
					t.Errorf("after the unrevert: %v", err)
				}
			}
		})
	}
}

// TestRetrySkipsPathThatFailsAgain: retried, a stopped rollback tries
// the failed step once more and, when it fails again, skips it, reports
// why and finishes the rest; a later step of the same file does not run
// (the file stays as the undo of its newer changes left it, a state it
// had).
func TestRetrySkipsPathThatFailsAgain(t *testing.T) {
	w := newWS(t)
	w.put("x/f", "xxxx")
	w.put("y/g", "yyyy")
	t1 := w.turn(func() {
		w.write("y/g", 0, "Y")
		w.write("x/f", 0, "X")
		w.truncate("x/f", 2)
	})
	clear := immutable(t, w.abs("x/f"))
	defer clear()
	out := w.rollback(t1, false)
	if out.Complete {
		t.Fatalf("outcome with an immutable file: %+v", out)
	}
	out = w.rollback(t1, false)
	if !out.Complete || out.Marker == nil {
		t.Fatalf("retried: %+v", out)
	}
	wantReport(t, "retried", out.Report, "x/f skip ("+reasonFailed+"reopen x/f: operation not permitted)", "y/g restore")
	clear()
	if got := w.read("x/f"); got != "Xx" {
		t.Errorf("x/f = %q, want it as the turn left it", got)
	}
}

// TestSymlinkedDirectoryMidwaySkipped: a directory replaced by a
// symlink behind cowfs's back while a rollback runs is not followed:
// the step that meets it finds its path not as the journal says, skips
// and reports it; nothing is done through the symlink, and the rest
// finishes.
func TestSymlinkedDirectoryMidwaySkipped(t *testing.T) {
	for _, op := range []string{"rollback", "unrevert"} {
		t.Run(op, func(t *testing.T) {
			w := newWS(t)
			_, t1 := twoFileTurn(w)
			dir := "x"
			if op == "unrevert" {
				w.rollback(t1, false)
				dir = "y"
			}
			w.env.AfterStep = func(step int) {
				if step == 1 {
					must(t, os.Rename(w.abs(dir), w.abs(dir+".real")))
					must(t, os.Symlink(dir+".real", w.abs(dir)))
				}
			}
			var out *Outcome
			if op == "rollback" {
				out = w.rollback(t1, false)
			} else {
				out = w.unrevert(false)
			}
			w.env.AfterStep = nil
			if !out.Complete {
				t.Fatalf("outcome: %+v", out)
			}
			want := map[string]string{"x.real/f": "Xxxx", "y/g": "yyyy"}
			if op == "unrevert" {
				want = map[string]string{"x/f": "Xxxx", "y.real/g": "yyyy"}
			}
			for p, c := range want {
				if got := w.read(p); got != c {
					t.Errorf("%s = %q, want %q: nothing is done through a symlink", p, got, c)
				}
			}
			if n := out.Counts.Skipped; n != 1 {
				t.Errorf("%d skipped, want the path behind the symlink: %+v", n, out.Report)
			}
		})
	}
}

// twoFileTurn seeds x/f and y/g and runs a turn that writes both (x/f
// first, so y/g's steps run first); it returns the workspace before the
// turn, and the turn.
func twoFileTurn(w *ws) (string, journal.Turn) {
	w.t.Helper()
	w.put("x/f", "xxxx")
	w.put("y/g", "yyyy")
	before := w.snapshot()
	return before, w.turn(func() {
		w.write("x/f", 0, "X")
		w.write("y/g", 0, "Y")
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnrevertStoppedThenRetried: an unrevert whose step fails stops
// with an error and leaves the rollback being undone; asking again
// goes on with that unrevert, and the workspace ends as it was before
// the rollback.
func TestUnrevertStoppedThenRetried(t *testing.T) {
	w := newWS(t)
	_, t1 := twoFileTurn(w)
	after := w.snapshot()
	w.rollback(t1, false)
	var clear func()
	w.env.AfterStep = func(step int) {
		if step == 1 {
			clear = immutable(t, w.abs("y/g"))
		}
	}
	_, err := Unrevert(w.env, false)
	w.env.AfterStep = nil
	if err == nil {
		t.Fatal("an unrevert over an immutable file succeeded")
	}
	clear()
	out, err := Unrevert(w.env, false)
	if err != nil {
		t.Fatalf("the unrevert asked again: %v", err)
	}
	if !out.Complete || len(out.Report) != 2 {
		t.Errorf("the unrevert asked again: %+v", out)
	}
	w.same("after the unrevert", after)
	if rbs, _ := w.j.Rollbacks(); len(rbs) != 0 {
		t.Errorf("rollbacks left: %+v", rbs)
	}
	w.turn(func() {}) // a turn can begin: nothing is left half done
}

// TestResumeKeepsRunTimeConflicts: a conflict a run finds before a crash
// (here f, replaced behind cowfs's back while the rollback runs) is
// still reported, and its records still count as not undone, when
// Resume finishes the run from where it stopped.
func TestResumeKeepsRunTimeConflicts(t *testing.T) {
	run := func(t *testing.T, crashAt int) (*Outcome, *ws) {
		w := newWS(t)
		w.put("f", "original")
		t1 := w.turn(func() {
			w.create("m", "m")
			w.write("f", 0, "TURN")
			w.create("n", "n")
		})
		w.env.AfterStep = func(step int) {
			if step == 1 {
				must(t, os.WriteFile(w.abs("f.new"), []byte("replaced by hand"), 0o644))
				must(t, os.Rename(w.abs("f.new"), w.abs("f")))
			}
			if step == crashAt {
				panic(crash{})
			}
		}
		if crashAt == 0 {
			out := w.rollback(t1, false)
			w.env.AfterStep = nil
			return out, w
		}
		func() {
			defer func() {
				if _, ok := recover().(crash); !ok {
					t.Fatal("no crash")
				}
			}()
			Rollback(w.env, t1, false, false)
		}()
		w.restart(w.opts)
		outs, err := Resume(w.env)
		if err != nil || len(outs) != 1 {
			t.Fatalf("resume: %+v, %v", outs, err)
		}
		return outs[0], w
	}
	want, w0 := run(t, 0)
	wantReport(t, "uninterrupted", want.Report, "f skip ("+reasonMismatch+")", "m delete", "n delete")
	rbs0, _ := w0.j.Rollbacks()
	got, w := run(t, 4)
	if actions(got.Report) != actions(want.Report) || got.Counts != want.Counts {
		t.Errorf("resumed: %s %+v\nuninterrupted: %s %+v", actions(got.Report), got.Counts, actions(want.Report), want.Counts)
	}
	rbs, _ := w.j.Rollbacks()
	if len(rbs) != 1 || len(rbs0) != 1 || fmt.Sprint(rbs[0].Skipped) != fmt.Sprint(rbs0[0].Skipped) || len(rbs[0].Skipped) == 0 {
		t.Errorf("records not undone: resumed %v, uninterrupted %v", rbs, rbs0)
	}
	if got := w.read("f"); got != "replaced by hand" {
		t.Errorf("f = %q", got)
	}
}
