package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// When something is off, the CLI says what to do: the command that
// mends it, with the workspace named.

// wantRefused runs cowfs ARGS and fails the test unless it exits with
// code and its error names every hint.
func (w *workspace) wantRefused(code int, hints []string, args ...string) {
	w.t.Helper()
	_, errOut, got := w.run(args...)
	if got != code {
		w.t.Errorf("cowfs %s: exit %d, want %d: %s", strings.Join(args, " "), got, code, errOut)
	}
	for _, h := range hints {
		if !strings.Contains(errOut, h) {
			w.t.Errorf("cowfs %s says %q; want it to name %q", strings.Join(args, " "), errOut, h)
		}
	}
}

// openTurns lists the turns the journal has open (none, or one).
func (w *workspace) openTurns() []uint64 {
	w.t.Helper()
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	var open []uint64
	for _, t := range l.Turns {
		if t.State == ctl.StateOpen {
			open = append(open, t.Num)
		}
	}
	return open
}

// What a turn left open refuses says how to end it — cowfs turn end,
// with the workspace — from the daemon and without one.
func TestBusyNamesTurnEnd(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo x > x")
	end := "cowfs turn end -w " + w.dir
	w.wantRefused(4, []string{"turn 1", end}, "rollback", "1")
	w.wantRefused(4, []string{"turn 1", end}, "turn", "begin")
	w.wantRefused(4, []string{"turn 1", end}, "purge", "--stop")

	// The harness went away and the daemon with it.
	w.killDaemon(w.status().Pid)
	w.wantRefused(4, []string{"turn 1", end}, "rollback", "1")
}

// A turn left open by a daemon that is gone ends without one, as the
// daemon would end it: what it changed is its, and it can be rolled
// back; a daemon started afterwards finds it ended.
func TestOfflineTurnEnd(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "zero\n"})
	w.mount()
	w.cowfs("turn", "begin", "--id", "left-open")
	w.sh("echo one > f; echo x > x")
	w.killDaemon(w.status().Pid)

	if out := w.cowfs("turn", "end"); !strings.Contains(out, "turn 1 ended") {
		t.Errorf("offline turn end says %q", out)
	}
	if open := w.openTurns(); len(open) != 0 {
		t.Fatalf("turns still open after an offline turn end: %v", open)
	}
	if d := w.turn("left-open"); d.ChangedPaths != 2 || d.State != ctl.StateClosed {
		t.Errorf("the turn ended offline: %+v", d.Turn)
	}
	// Ending it again: there is no open turn (exit 7).
	w.wantRefused(7, nil, "turn", "end")

	w.rollback("left-open")
	w.wantFile("after rolling back the turn ended offline", "f", "zero\n")
	w.wantFile("after rolling back the turn ended offline", "x", "")

	w.mount()
	if st := w.status(); st.OpenTurn != nil {
		t.Errorf("a daemon started after the offline end finds turn %d open", st.OpenTurn.Num)
	}
	w.wantHistory("mounted again", map[uint64]string{1: ctl.StateReverted}, 1)
}

// With no daemon, a command that needs one says how to start it: with
// the workspace it was given, or, run without -w, the current directory
// and -w for another.
func TestNoDaemonSuggestsMount(t *testing.T) {
	w := newWorkspace(t)
	w.wantRefused(3, []string{"cowfs mount -d -w " + w.dir}, "status")
	w.wantRefused(3, []string{"cowfs mount -d -w " + w.dir}, "turn", "begin")

	elsewhere := t.TempDir()
	errOut, code := w.runIn(elsewhere, "turn", "begin")
	if code != 3 || !strings.Contains(errOut, "cowfs mount -d -w "+elsewhere) || !strings.Contains(errOut, "-w WORKSPACE") {
		t.Errorf("turn begin outside any workspace: exit %d: %q; want 3, suggesting cowfs mount -d -w %s and -w WORKSPACE", code, errOut, elsewhere)
	}

	// What it suggests works.
	w.cowfs("mount", "-d", "-w", w.dir)
	w.pids = append(w.pids, w.status().Pid)
	w.cowfs("turn", "begin")
	w.cowfs("turn", "end")
}

// cowfs run --turn ends its turn however the run ends: the command
// fails, a signal kills it, cowfs run is sent SIGTERM, SIGINT or
// SIGHUP, the command cannot be started, or the sandbox itself is
// killed.
func TestRunTurnEndsOnEveryExit(t *testing.T) {
	w := newWorkspace(t)
	ends := []struct {
		name   string
		script string
		signal syscall.Signal // sent to cowfs run once the command is ready
		killSB bool           // kill the sandbox instead
		want   int
	}{
		{name: "fails", script: "echo x > f; exit 3", want: 3},
		{name: "killed", script: "echo x > f; kill -KILL $$", want: 128 + 9},
		{name: "SIGTERM", script: "echo x > f; echo ready; exec sleep 1000", signal: syscall.SIGTERM, want: 128 + 15},
		{name: "SIGINT", script: "echo x > f; echo ready; exec sleep 1000", signal: syscall.SIGINT, want: 128 + 2},
		{name: "SIGHUP", script: "echo x > f; echo ready; exec sleep 1000", signal: syscall.SIGHUP, want: 128 + 1},
		{name: "no-such-command", script: "exec ./no-such-command", want: 127},
		{name: "not-executable", script: "echo > plain; exec ./plain", want: 126},
		{name: "sandbox-killed", script: "echo x > f; echo ready; exec sleep 1000", killSB: true, want: 128 + 9},
	}
	for _, e := range ends {
		r := w.start(e.script, "--turn", "--id", e.name)
		if e.signal != 0 || e.killSB {
			r.expect("ready")
		}
		if e.signal != 0 {
			r.signal(e.signal)
		}
		if e.killSB {
			kids := childrenOf(r.cmd.Process.Pid)
			if len(kids) != 1 {
				t.Fatalf("cowfs run's children: %v, want the sandbox", kids)
			}
			syscall.Kill(kids[0], syscall.SIGKILL)
		} else {
			r.stdin.Close()
		}
		if code := r.wait(); code != e.want {
			t.Errorf("%s: exit %d, want %d: %s", e.name, code, e.want, r.stderr.String())
		}
		if open := w.openTurns(); len(open) != 0 {
			t.Fatalf("%s: turns still open after cowfs run --turn: %v; %s", e.name, open, r.stderr.String())
		}
		if d := w.turn(e.name); d.State != ctl.StateClosed {
			t.Errorf("%s: turn %+v", e.name, d.Turn)
		}
	}
}

// umount --force detaches a cowfs mount whose daemon hangs — here
// stopped with SIGSTOP — by aborting its FUSE connection, rather than
// waiting for a status reply that never comes. A file was just created
// in the workspace's root, so the kernel no longer trusts what it
// cached of the root: anything that looks at the mountpoint itself
// would wait on the daemon.
func TestUmountForceAbortsHungDaemon(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	pid := w.status().Pid
	w.sh("echo x > new")
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

	cmd := exec.Command(cowfsBin, "-w", w.dir, "umount", "--force")
	cmd.Env = w.env()
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Not a measure of speed: a guard, so that a umount that waits for
	// the daemon (minutes) fails the test instead of hanging it.
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("umount --force of a hung daemon: %v: %s", err, errOut.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Errorf("umount --force still waits for the stopped daemon: %s", errOut.String())
	}
	if mounted(w.dir) {
		t.Errorf("%s is still mounted after umount --force", w.dir)
	}
	if !strings.Contains(errOut.String(), "aborted") {
		t.Errorf("umount --force says %q; want it to say it aborted the connection", errOut.String())
	}
	w.killDaemon(pid)
}

// fsck while a daemon serves the workspace says to unmount it first,
// with the command that does.
func TestFsckWhileMountedSaysUnmount(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	w.wantRefused(4, []string{"cowfs umount -w " + w.dir}, "fsck")
}

// purge finds a journal --journal put elsewhere from the state
// directory's record of it: given no --journal, it still removes it.
func TestPurgeFindsMovedJournal(t *testing.T) {
	w := newWorkspace(t)
	jdir := filepath.Join(t.TempDir(), "journal")
	w.mount("--journal", jdir)
	w.cowfs("turn", "begin")
	w.sh("echo x > x")
	w.cowfs("turn", "end")
	w.umount()

	out := w.cowfs("purge")
	if !strings.Contains(out, "removed "+jdir) {
		t.Errorf("purge says %q; want it to remove %s", out, jdir)
	}
	if _, err := os.Stat(jdir); !os.IsNotExist(err) {
		t.Errorf("the journal at %s after purge: %v", jdir, err)
	}
}

// What the state directory records as the journal is removed only if
// it still is one: a directory put there since is named and left alone,
// and --journal removes it if asked.
func TestPurgeLeavesRecordedNonJournal(t *testing.T) {
	w := newWorkspace(t)
	jdir := filepath.Join(t.TempDir(), "journal")
	w.mount("--journal", jdir)
	w.umount()
	if err := os.RemoveAll(jdir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(jdir, "precious"), 0o755); err != nil {
		t.Fatal(err)
	}

	w.wantRefused(1, []string{jdir, "--journal " + jdir}, "purge")
	if _, err := os.Stat(filepath.Join(jdir, "precious")); err != nil {
		t.Fatalf("a refused purge removed what the record names: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, ".cowfs")); err != nil {
		t.Errorf("a refused purge removed the private directory: %v", err)
	}
	w.cowfs("purge", "--journal", jdir)
	if _, err := os.Stat(jdir); !os.IsNotExist(err) {
		t.Errorf("purge --journal %s left it: %v", jdir, err)
	}
}
