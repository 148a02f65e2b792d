package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/testenv"
)

// running is a cowfs run this test started.
type running struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner // the command's standard output
	stderr bytes.Buffer
	code   int
	done   bool
}

// start starts cowfs run on the workspace with flags, running script
// with sh. The test talks to the script through its standard input and
// output.
func (w *workspace) start(script string, flags ...string) *running {
	w.t.Helper()
	return w.startCommand(flags, "sh", "-c", script)
}

// startCommand starts cowfs run on the workspace with flags, running
// argv.
func (w *workspace) startCommand(flags []string, argv ...string) *running {
	w.t.Helper()
	args := append([]string{"run", "-w", w.dir}, flags...)
	args = append(append(args, "--"), argv...)
	r := &running{t: w.t.(*testing.T), cmd: exec.Command(cowfsBin, args...)}
	r.cmd.Env = w.env()
	r.cmd.ExtraFiles = w.inherit
	r.cmd.Stderr = &r.stderr
	// A process group of its own, as a shell gives a job: a signal to
	// the group reaches cowfs run, not the test.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		w.t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	r.lines = bufio.NewScanner(out)
	if err := r.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(r.stop)
	return r
}

// runCmd runs script under cowfs run to its end and returns its exit
// code.
func (w *workspace) runCmd(script string, flags ...string) int {
	w.t.Helper()
	r := w.start(script, flags...)
	r.stdin.Close()
	return r.wait()
}

// expect waits for the next line of the command's output and fails the
// test unless it is line.
func (r *running) expect(line string) {
	r.t.Helper()
	if !r.lines.Scan() {
		r.t.Fatalf("the command's output ended waiting for %q (%v); stderr: %s", line, r.lines.Err(), r.stderr.String())
	}
	if got := r.lines.Text(); got != line {
		r.t.Fatalf("the command said %q, want %q", got, line)
	}
}

// send writes a line to the command's standard input.
func (r *running) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// wait waits for cowfs run to exit and returns its exit code.
func (r *running) wait() int {
	r.t.Helper()
	for r.lines.Scan() {
	}
	err := r.cmd.Wait()
	r.done = true
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.t.Fatalf("cowfs run: %v", err)
	}
	return r.code
}

// stop ends a cowfs run the test left running: SIGTERM, which it
// forwards to the command; if that is not enough, SIGKILL to the
// sandbox (its child) and to it. The sandbox's death kills the command
// (Pdeathsig) and with them goes the private mount.
func (r *running) stop() {
	if r.done {
		return
	}
	r.stdin.Close()
	pid := r.cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		for r.lines.Scan() {
		}
		r.cmd.Wait()
		close(exited)
	}()
	syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		r.t.Errorf("cowfs run %d did not end on SIGTERM; killing it", pid)
		for _, c := range childrenOf(pid) {
			syscall.Kill(c, syscall.SIGKILL)
		}
		syscall.Kill(pid, syscall.SIGKILL)
		<-exited
	}
	r.done = true
}

// childrenOf lists the children of process pid, from every thread's
// list (a Go program forks from any of its threads).
func childrenOf(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var kids []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(c); err == nil {
				kids = append(kids, n)
			}
		}
	}
	return kids
}

// signal sends s to cowfs run.
func (r *running) signal(s syscall.Signal) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(s); err != nil {
		r.t.Fatal(err)
	}
}

// cowfs run exits with the command's status, 128+N if signal N killed
// it, 127 if there is no such command; and when it has exited, the
// journal is closed (a command can open it without a daemon) and
// nothing is mounted.
func TestRunExitStatus(t *testing.T) {
	w := newWorkspace(t)
	for _, c := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"echo x > f; exit 3", 3},
		{"kill -KILL $$", 128 + 9},
		{"kill -TERM $$", 128 + 15},
		{"exec ./no-such-command", 127},
	} {
		if got := w.runCmd(c.script); got != c.want {
			t.Errorf("cowfs run -- sh -c %q: exit %d, want %d", c.script, got, c.want)
		}
	}
	if mounted(w.dir) {
		t.Errorf("%s is mounted in the host's namespace", w.dir)
	}
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if l.OutsideTurns != 1 {
		t.Errorf("log after the runs: %+v, want f changed outside turns", l)
	}
	w.wantFile("after the runs", "f", "x\n")
}

// What the command leaves running in its process group is killed when
// it exits: the workspace is about to go.
func TestRunLeftovers(t *testing.T) {
	w := newWorkspace(t)
	r := w.start(`sleep 1000 & echo $!`)
	if !r.lines.Scan() {
		t.Fatalf("no pid: %s", r.stderr.String())
	}
	pid, err := strconv.Atoi(r.lines.Text())
	if err != nil {
		t.Fatal(err)
	}
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d: %s", code, r.stderr.String())
	}
	// Dead: gone, or a zombie its new parent has yet to reap.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))[0] == "Z" {
			break
		}
		if time.Now().After(end) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command's background process %d outlived cowfs run", pid)
		}
	}
}

// Signals sent to cowfs run reach the command; the terminal's own go to
// its process group.
func TestRunSignals(t *testing.T) {
	w := newWorkspace(t)
	r := w.start(`trap 'echo winch' WINCH; trap 'echo term; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
	r.expect("ready")
	r.signal(syscall.SIGWINCH)
	r.expect("winch")
	r.signal(syscall.SIGTERM)
	r.expect("term")
	if code := r.wait(); code != 7 {
		t.Errorf("after SIGTERM the command trapped: exit %d, want 7; %s", code, r.stderr.String())
	}
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
		r := w.start(`echo ready; exec sleep 1000`)
		r.expect("ready")
		r.signal(s)
		if code := r.wait(); code != 128+int(s) {
			t.Errorf("after %v: exit %d, want %d; %s", s, code, 128+int(s), r.stderr.String())
		}
	}
}

// A signal sent to cowfs run's whole process group (a script's ^C, a
// supervisor's kill -TERM -PGID) reaches the command once: only cowfs
// run relays it; the sandbox process beneath, which receives it too,
// drops what it receives itself.
func TestRunGroupSignalOnce(t *testing.T) {
	w := newWorkspace(t)
	r := w.start(`trap 'echo term' TERM; trap 'echo bye; exit 0' USR1; echo ready; while :; do sleep 0.05; done`)
	r.expect("ready")
	pid := r.cmd.Process.Pid
	syscall.Kill(-pid, syscall.SIGTERM)
	r.expect("term")

	kids := childrenOf(pid)
	if len(kids) != 1 {
		t.Fatalf("cowfs run's children: %v, want the sandbox", kids)
	}
	syscall.Kill(kids[0], syscall.SIGTERM) // dropped
	r.signal(syscall.SIGUSR1)
	r.expect("bye")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d: %s", code, r.stderr.String())
	}
}

// If cowfs run is killed, the command gets SIGHUP, as when its terminal
// goes, and the sandbox still closes the journal when it exits.
func TestRunKilled(t *testing.T) {
	w := newWorkspace(t)
	r := w.start(`trap 'echo hup; exit 0' HUP; echo ready; while :; do sleep 0.05; done`)
	r.expect("ready")
	r.signal(syscall.SIGKILL)
	r.expect("hup")
	r.wait()
	if ws := r.cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("cowfs run killed: %v", ws)
	}
	// The output ended: the sandbox has exited, the journal is free.
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
}

// Only the command sees the mount; the host keeps seeing the backing
// directory, and the control socket serves while the command runs.
func TestRunPrivateMount(t *testing.T) {
	w := newWorkspace(t)
	r := w.start(`awk -v ws="$PWD" '$5 == ws { for (i = 7; $i != "-"; i++) {}; print $(i+1) }' /proc/self/mountinfo; umask; read x`)
	r.expect("fuse.cowfs")
	// The command gets cowfs run's umask.
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	r.expect(fmt.Sprintf("%04o", mask))
	if mounted(w.dir) {
		t.Errorf("the workspace is mounted in the host's namespace")
	}
	st := w.status()
	if st.Pid == 0 || st.Workspace != w.dir {
		t.Errorf("status during the run: %+v", st)
	}
	r.send("")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d: %s", code, r.stderr.String())
	}
	if _, _, code := w.run("status"); code != 3 {
		t.Errorf("status after the run: exit %d, want 3 (no daemon)", code)
	}
}

// --turn makes the command one turn, also when it fails; after the run
// the turns can be rolled back and unreverted without a daemon.
func TestRunTurn(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "zero\n"})
	if code := w.runCmd("echo one > f", "--turn", "--id", "ok", "--anchor", "msg-1"); code != 0 {
		t.Fatalf("first run: exit %d", code)
	}
	if code := w.runCmd("echo two > f; echo g > g; exit 5", "--turn", "--id", "bad", "--anchor", "msg-2"); code != 5 {
		t.Fatalf("second run: exit %d, want 5", code)
	}
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if len(l.Turns) != 2 || l.Turns[0].ID != "ok" || l.Turns[1].ID != "bad" || l.Turns[1].Anchor != "msg-2" ||
		l.Turns[1].State != ctl.StateClosed || l.Turns[1].ChangedPaths != 2 {
		t.Fatalf("turns after two runs: %+v", l.Turns)
	}

	// A turn id in use: the command never runs.
	if code := w.runCmd("echo ran > ran", "--turn", "--id", "ok"); code != 7 {
		t.Errorf("run with a used turn id: exit %d, want 7", code)
	}
	w.wantFile("after a refused run", "ran", "")

	res := w.rollback("bad")
	if res.Marker == nil || res.Marker.Anchor != "msg-2" {
		t.Errorf("marker of the offline rollback: %+v", res.Marker)
	}
	w.wantFile("after rolling back the failed run", "f", "one\n")
	w.wantFile("after rolling back the failed run", "g", "")
	w.cowfs("unrevert")
	w.wantFile("after unrevert", "f", "two\n")
	w.wantFile("after unrevert", "g", "g\n")
	w.rollback("ok")
	w.wantFile("after rolling back both", "f", "zero\n")
	w.wantHistory("after rolling back both", map[uint64]string{1: ctl.StateReverted, 2: ctl.StateReverted}, 1)
}

// What the host writes to the workspace while a command runs bypasses
// the journal: it is found at the boundaries and rollbacks leave it.
func TestRunHostWrites(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": "a\n"})
	r := w.start(`echo ready; read x; echo A > a.txt; echo b > b.txt; echo done; read x; echo c > c.txt; echo done; read x`)
	r.expect("ready")
	w.cowfs("turn", "begin")
	r.send("")
	r.expect("done")
	w.behind("echo host > h.txt")
	w.cowfs("turn", "end")
	w.cowfs("turn", "begin")
	r.send("")
	r.expect("done")
	w.behind("echo host >> a.txt")
	w.cowfs("turn", "end")

	// a.txt, changed by turn 1 and then by the host, is skipped; h.txt,
	// which the journal never saw, is left alone.
	res := byPath(w.rollback("1"))
	if a := res["a.txt"]; a.Action != ctl.ActionSkip || a.Reason != "changed outside the mount" {
		t.Errorf("rollback of a.txt, written by the host: %+v", a)
	}
	w.wantFile("after rollback", "a.txt", "A\nhost\n")
	w.wantFile("after rollback", "h.txt", "host\n")
	w.wantFile("after rollback", "b.txt", "")
	w.wantFile("after rollback", "c.txt", "")
	r.send("")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d: %s", code, r.stderr.String())
	}
}

// The command gets the terminal: it is the terminal's foreground
// process group, so ^C reaches it and not cowfs.
func TestRunTerminal(t *testing.T) {
	w := newWorkspace(t)
	cmd, master := w.startOnTerminal(`awk '{print "pgrp=" $5 " tpgid=" $8 " pid=" $1}' /proc/$$/stat; test -t 0 && echo tty`)
	out, _ := io.ReadAll(master) // EIO once the last writer is gone
	if err := cmd.Wait(); err != nil {
		t.Fatalf("cowfs run on a terminal: %v: %s", err, out)
	}
	var pgrp, tpgid, pid int
	for _, l := range strings.Split(strings.ReplaceAll(string(out), "\r", ""), "\n") {
		if strings.HasPrefix(l, "pgrp=") {
			fields := strings.Fields(strings.NewReplacer("pgrp=", "", "tpgid=", "", "pid=", "").Replace(l))
			pgrp, _ = strconv.Atoi(fields[0])
			tpgid, _ = strconv.Atoi(fields[1])
			pid, _ = strconv.Atoi(fields[2])
		}
	}
	if pgrp == 0 || pgrp != pid || tpgid != pgrp || !strings.Contains(string(out), "tty") {
		t.Errorf("the command is not the terminal's foreground group: pid %d pgrp %d tpgid %d: %q", pid, pgrp, tpgid, out)
	}
}

// ^Z stops the command and cowfs run with it, as a shell's job; when
// continued, the command has the terminal again and goes on.
func TestRunJobControl(t *testing.T) {
	w := newWorkspace(t)
	cmd, master := w.startOnTerminal(`echo ready; read a; echo "got $a"`)
	pid := cmd.Process.Pid
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(master)
		for sc.Scan() {
			lines <- strings.TrimRight(sc.Text(), "\r")
		}
		close(lines)
	}()
	waitLine := func(want string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the terminal closed waiting for %q", want)
				}
				if l == want {
					return
				}
			case <-time.After(time.Minute):
				t.Fatalf("no %q on the terminal", want)
			}
		}
	}
	waitLine("ready")
	master.Write([]byte{0x1a}) // ^Z
	stopped := false
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && !stopped; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		stopped = len(f) > 0 && f[0] == "T"
	}
	if !stopped {
		t.Fatalf("cowfs run did not stop on ^Z")
	}
	syscall.Kill(-pid, syscall.SIGCONT) // what fg does
	master.Write([]byte("again\n"))
	waitLine("got again")
	if err := cmd.Wait(); err != nil {
		t.Errorf("cowfs run after ^Z and fg: %v", err)
	}
}

// startOnTerminal starts cowfs run with script on a new terminal,
// whose session it leads, and returns the terminal's master side.
func (w *workspace) startOnTerminal(script string) (*exec.Cmd, *os.File) {
	t := w.t.(*testing.T)
	t.Helper()
	master, slave := openPty(t)
	cmd := exec.Command(cowfsBin, "run", "-w", w.dir, "--", "sh", "-c", script)
	cmd.Env = w.env()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			syscall.Kill(-pid, syscall.SIGCONT)
			syscall.Kill(pid, syscall.SIGTERM)
			cmd.Wait()
		}
	})
	return cmd, master
}

// openPty opens a pseudo-terminal pair.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		testenv.Skip(t, "no pseudo-terminals: "+err.Error())
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(filepath.Join("/dev/pts", strconv.Itoa(int(n))), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}
