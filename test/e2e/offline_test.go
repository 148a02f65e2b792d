package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// umount stops the workspace's daemon and waits until it has exited.
func (w *workspace) umount() {
	w.t.Helper()
	w.cowfs("umount")
	for _, pid := range w.pids {
		if !waitExit(pid, 10*time.Second) {
			w.t.Fatalf("daemon %d still running after umount", pid)
		}
	}
	w.pids = nil
}

// With no daemon, the CLI opens the journal itself: log, show, diff,
// cat, markers, rollback (dry run, guarded, forced), unrevert and undo
// answer as the daemon did, in the same JSON, and act on the backing
// directory; a path changed while no daemon ran is a conflict.
func TestOfflineHistory(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": "a\n", "b.txt": "b\n", "keep.txt": "k\n"})
	w.mount()
	w.cowfs("turn", "begin", "--id", "first", "--anchor", "msg-1")
	w.sh("echo A > a.txt; rm b.txt; echo new > c.txt; echo K > keep.txt")
	w.cowfs("turn", "end")
	var onlineLog ctl.TurnList
	w.cowfsJSON(&onlineLog, "log")
	online := w.turn("1")
	onlineDry := w.rollbackDry("1")
	w.umount()

	var offlineLog ctl.TurnList
	w.cowfsJSON(&offlineLog, "log")
	if !reflect.DeepEqual(offlineLog, onlineLog) {
		t.Errorf("log without a daemon:\n%+v\nwith one:\n%+v", offlineLog, onlineLog)
	}
	if offline := w.turn("first"); !reflect.DeepEqual(offline, online) {
		t.Errorf("show without a daemon:\n%+v\nwith one:\n%+v", offline, online)
	}
	if dry := w.rollbackDry("1"); !reflect.DeepEqual(dry, onlineDry) {
		t.Errorf("dry run without a daemon:\n%+v\nwith one:\n%+v", dry, onlineDry)
	}
	if got := w.cowfs("cat", "--at", "1", "b.txt"); got != "b\n" {
		t.Errorf("cat b.txt at turn 1: %q", got)
	}
	var d ctl.Diff
	w.cowfsJSON(&d, "diff", "1")
	if len(d.Files) != 4 {
		t.Errorf("diff of turn 1: %d files, want 4: %+v", len(d.Files), d.Files)
	}
	// Turns need a mount.
	if _, errOut, code := w.run("turn", "begin"); code != 3 {
		t.Errorf("turn begin without a daemon: exit %d: %s", code, errOut)
	}

	// keep.txt changes while no daemon runs: the rollback leaves it.
	w.behind("echo host > keep.txt")
	res := w.rollback("1")
	if a := byPath(res)["keep.txt"]; a.Action != ctl.ActionSkip || a.Reason != "changed outside the mount" {
		t.Errorf("rollback of keep.txt, changed with no daemon: %+v", a)
	}
	if res.Marker == nil || res.Marker.ID != "first" || res.Marker.Anchor != "msg-1" {
		t.Errorf("marker: %+v", res.Marker)
	}
	for rel, want := range map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "", "keep.txt": "host\n"} {
		w.wantFile("after an offline rollback", rel, want)
	}
	w.wantHistory("after an offline rollback", map[uint64]string{1: ctl.StateReverted}, 1)

	var un ctl.RollbackResult
	w.cowfsJSON(&un, "unrevert")
	if !un.Unrevert || !un.Complete {
		t.Errorf("unrevert: %+v", un)
	}
	for rel, want := range map[string]string{"a.txt": "A\n", "b.txt": "", "c.txt": "new\n", "keep.txt": "host\n"} {
		w.wantFile("after an offline unrevert", rel, want)
	}
	w.wantHistory("after an offline unrevert", map[uint64]string{1: ctl.StateClosed})

	// undo is rollback to the latest turn; --force overwrites keep.txt.
	w.cowfsJSON(&res, "undo", "--force")
	w.wantFile("after a forced offline undo", "keep.txt", "k\n")
	w.wantFile("after a forced offline undo", "a.txt", "a\n")

	// A daemon started afterwards sees the same history.
	w.mount()
	w.wantHistory("mounted again", map[uint64]string{1: ctl.StateReverted}, 1)
	w.cowfs("unrevert")
	w.wantFile("unreverted by the daemon", "c.txt", "new\n")
}

// Two processes never hold the journal at once: while a command works
// on the workspace without a daemon, another offline command and a
// mount are refused, naming its pid; and an offline command never
// starts while a daemon holds the journal.
func TestOfflineRefusedWhileJournalHeld(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": "a\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo A > a.txt; echo b > b.txt")
	w.cowfs("turn", "end")
	w.umount()

	pause := t.TempDir()
	first := exec.Command(cowfsBin, "-w", w.dir, "rollback", "1", "--json")
	first.Env = append(w.env(), fmt.Sprintf("COWFS_TEST_ROLLBACK_PAUSE=1:%s", pause))
	var out bytes.Buffer
	first.Stdout, first.Stderr = &out, &out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	resume := func() { os.WriteFile(filepath.Join(pause, "resume"), nil, 0o644) }
	t.Cleanup(func() {
		resume()
		first.Wait()
	})
	waitFile(t, filepath.Join(pause, "paused"))

	holder := "pid " + strconv.Itoa(first.Process.Pid)
	for _, args := range [][]string{{"log"}, {"rollback", "1"}, {"markers", "--json"}} {
		_, errOut, code := w.run(args...)
		if code != 4 || !strings.Contains(errOut, holder) {
			t.Errorf("cowfs %v while an offline rollback holds the journal: exit %d, want 4 naming %s: %s", args, code, holder, errOut)
		}
	}
	mnt := exec.Command(cowfsBin, "mount", "--background", w.dir)
	mnt.Env = w.env()
	if b, err := mnt.CombinedOutput(); exitOf(err) != 8 || !strings.Contains(string(b), holder) {
		t.Errorf("mount while an offline rollback holds the journal: %v, want exit 8 naming %s: %s", err, holder, b)
	}

	resume()
	if err := first.Wait(); err != nil {
		t.Fatalf("the paused offline rollback: %v: %s", err, out.String())
	}
	w.wantFile("after the offline rollback", "b.txt", "")

	// With a daemon running, the same commands go through its socket.
	w.mount()
	w.remountKeepsSocket()
}

// remountKeepsSocket checks that commands reach the running daemon, not
// the journal: the daemon's pid is the one status and log agree on.
func (w *workspace) remountKeepsSocket() {
	w.t.Helper()
	st := w.status()
	if st.Pid != w.pids[len(w.pids)-1] || st.Mountpoint == "" {
		w.t.Errorf("status with a daemon: %+v", st)
	}
	w.wantHistory("through the daemon", map[uint64]string{1: ctl.StateReverted}, 1)
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear", path)
}

// exitOf returns the exit code err (from exec) stands for.
func exitOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// A daemon holds the journal, but the command cannot reach its socket
// (here: the daemon's sockets are in COWFS_SOCKET_DIR, the command's
// environment does not say so): the command must not open the journal
// behind the daemon's back, and says who holds it.
func TestOfflineRefusedWhileDaemonRuns(t *testing.T) {
	w := newWorkspace(t)
	sockets := filepath.Join(t.TempDir(), "sockets")
	w.daemonEnv = append(w.daemonEnv, "COWFS_SOCKET_DIR="+sockets)
	mnt := exec.Command(cowfsBin, "mount", "--background", w.dir)
	mnt.Env = append(w.env(), w.daemonEnv...)
	if b, err := mnt.CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, b)
	}
	status := exec.Command(cowfsBin, "-w", w.dir, "status", "--json")
	status.Env = append(w.env(), w.daemonEnv...)
	b, err := status.Output()
	if err != nil {
		t.Fatalf("status through the daemon's socket: %v", err)
	}
	var st ctl.Status
	if err := json.Unmarshal(b, &st); err != nil || !strings.HasPrefix(st.Socket, sockets+"/") {
		t.Fatalf("status: %s (%v): the socket is not in COWFS_SOCKET_DIR", b, err)
	}
	defer func() {
		um := exec.Command(cowfsBin, "umount", w.dir)
		um.Env = append(w.env(), w.daemonEnv...)
		if b, err := um.CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, b)
		}
		if !waitExit(st.Pid, 10*time.Second) {
			t.Errorf("daemon %d still running after umount", st.Pid)
		}
	}()

	_, errOut, code := w.run("log")
	if code != 4 || !strings.Contains(errOut, "pid "+strconv.Itoa(st.Pid)) {
		t.Errorf("log with the daemon's socket out of reach: exit %d, want 4 naming pid %d: %s", code, st.Pid, errOut)
	}
}

// After a daemon was killed, its stale mount is cleared and the history
// is there without a daemon.
func TestOfflineAfterCrash(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo x > x")
	w.cowfs("turn", "end")
	w.killDaemon(w.status().Pid)
	res := w.rollback("1")
	if res.Counts.Deleted != 1 {
		t.Errorf("offline rollback after a crash: %+v", res)
	}
	if mounted(w.dir) {
		t.Errorf("the stale mount is still there")
	}
	w.wantFile("after the offline rollback", "x", "")
}

// A command working without a daemon keeps every turn: the window is
// the daemon's setting, which it does not know.
func TestOfflineKeepsWindow(t *testing.T) {
	w := newWorkspace(t)
	w.mount("--window", "12")
	for i := range 11 {
		w.cowfs("turn", "begin")
		w.sh(fmt.Sprintf("echo %d > f", i))
		w.cowfs("turn", "end")
	}
	w.umount()
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if len(l.Turns) != 11 {
		t.Errorf("log without a daemon: %d turns, want the 11 a window of 12 keeps", len(l.Turns))
	}
	w.mount("--window", "12")
	w.cowfsJSON(&l, "log")
	if len(l.Turns) != 11 {
		t.Errorf("log after remounting: %d turns, want 11", len(l.Turns))
	}
}
