package agent

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/journal"
)

// agentShell starts a shell that waits for a line on its standard
// input, then runs script; it returns the shell and the writer that
// lets it go. The shell and everything it leaves are killed at the end
// of the test (by the pids it writes, never by name).
func agentShell(t *testing.T, script string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "read go; "+script)
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		for _, f := range []string{"daemon.pid", "child.pid"} {
			if pid, ok := readPid(filepath.Join(cmd.Dir, f)); ok {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return cmd, in
}

func readPid(p string) (int, bool) {
	b, err := os.ReadFile(p)
	if err != nil || !strings.HasSuffix(string(b), "\n") {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

// waitPid waits for the shell to write a pid into file.
func waitPid(t *testing.T, dir, file string) uint32 {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if pid, ok := readPid(filepath.Join(dir, file)); ok {
			return uint32(pid)
		}
	}
	t.Fatalf("no %s", file)
	return 0
}

func ppid(pid uint32) uint32 {
	st, _ := readStat(pid)
	return st.ppid
}

// A scope's process is followed across fork and exec, and a daemon it
// double-forks stays its own after it is re-parented away from it; the
// test process, its parent, and a process it starts beside it are not
// the agent.
func TestDescendantsFollowed(t *testing.T) {
	tr := NewTracker(nil)
	defer tr.Close()
	if !tr.Following() {
		t.Skip("the process-events connector is not available here (not root, or not in the initial namespaces)")
	}
	sh, release := agentShell(t, `
		(sh -c 'sleep 60 & echo $! > daemon.pid' &)
		sh -c 'exec sleep 60' & echo $! > child.pid
		exec sleep 60`)
	s, err := tr.Resolve(Spec{Pids: []uint32{uint32(sh.Process.Pid)}})
	if err != nil {
		t.Fatal(err)
	}
	release.Write([]byte("go\n"))
	daemon := waitPid(t, sh.Dir, "daemon.pid")
	child := waitPid(t, sh.Dir, "child.pid")
	for end := time.Now().Add(10 * time.Second); ppid(daemon) == uint32(sh.Process.Pid) || ppid(daemon) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the daemon was not re-parented")
		}
	}
	stranger := exec.Command("sleep", "60")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stranger.Process.Kill(); stranger.Wait() }()

	for _, c := range []struct {
		what  string
		pid   uint32
		agent bool
	}{
		{"the agent, after it exec'd", uint32(sh.Process.Pid), true},
		{"its child, after it exec'd", child, true},
		{"its daemon, re-parented", daemon, true},
		{"the test process", uint32(os.Getpid()), false},
		{"a process the test started beside it", uint32(stranger.Process.Pid), false},
		{"an unknown process (pid 0)", 0, false},
	} {
		if got := tr.Agent(s, c.pid, 4242); got != c.agent {
			t.Errorf("%s (pid %d, parent %d): agent %v, want %v", c.what, c.pid, ppid(c.pid), got, c.agent)
		}
	}
	// A uid in the scope is the agent's whatever the process.
	s.Uids = []uint32{4242}
	if !tr.Agent(s, uint32(os.Getpid()), 4242) {
		t.Error("a uid in the scope is not the agent's")
	}
	// A scope's process that exits leaves its descendants the agent's,
	// and its pid, if reused, is nobody's.
	syscall.Kill(sh.Process.Pid, syscall.SIGKILL)
	sh.Wait()
	s.Uids = nil
	if !tr.Agent(s, daemon, 1) {
		t.Error("the daemon stopped being the agent's when the agent exited")
	}
}

// Without the connector (a daemon outside the initial namespaces)
// descendants are found by their parents while those live.
func TestDescendantsFallback(t *testing.T) {
	tr := NewTracker(nil)
	tr.tried = true // as if the connector could not be had
	defer tr.Close()
	sh, release := agentShell(t, `sh -c 'exec sleep 60' & echo $! > child.pid; exec sleep 60`)
	s, err := tr.Resolve(Spec{Pids: []uint32{uint32(sh.Process.Pid)}})
	if err != nil {
		t.Fatal(err)
	}
	release.Write([]byte("go\n"))
	child := waitPid(t, sh.Dir, "child.pid")
	if !tr.Agent(s, child, 1) {
		t.Error("the child is not the agent's")
	}
	if tr.Agent(s, uint32(os.Getpid()), 1) {
		t.Error("the test process is the agent's")
	}
}

// A cgroup scope holds the processes in that cgroup or beneath it.
func TestCgroupScope(t *testing.T) {
	mnt, ok := cgroup2Mount()
	if !ok {
		t.Skip("no cgroup v2 hierarchy")
	}
	dir, err := os.MkdirTemp(mnt, "cowfs-agent-test-")
	if err != nil {
		t.Skipf("cannot make a cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	sh, release := agentShell(t, `sh -c 'exec sleep 60' & echo $! > child.pid; exec sleep 60`)
	defer func() { sh.Process.Kill(); sh.Wait() }()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sh.Process.Pid)), 0); err != nil {
		t.Skipf("cannot move a process into a cgroup: %v", err)
	}
	tr := NewTracker(nil)
	defer tr.Close()
	s, err := tr.Resolve(Spec{Cgroups: []string{dir}}) // the full path: taken relative to the mount
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(dir, mnt); len(s.Cgroups) != 1 || s.Cgroups[0] != want {
		t.Fatalf("cgroups %q, want [%q]", s.Cgroups, want)
	}
	release.Write([]byte("go\n"))
	child := waitPid(t, sh.Dir, "child.pid")
	if !tr.Agent(s, child, 1) || !tr.Agent(s, uint32(sh.Process.Pid), 1) {
		t.Error("a process in the cgroup is not the agent's")
	}
	if tr.Agent(s, uint32(os.Getpid()), 1) {
		t.Error("the test process, outside the cgroup, is the agent's")
	}
	sh.Process.Kill()
	sh.Wait()
	syscall.Kill(int(child), syscall.SIGKILL)
	// The cgroup goes once its last process has.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if os.Remove(dir) == nil {
			return
		}
	}
	t.Errorf("cgroup %s still holds processes", dir)
}

// What a harness names must exist.
func TestResolveRefuses(t *testing.T) {
	tr := NewTracker(nil)
	defer tr.Close()
	if _, err := tr.Resolve(Spec{Pids: []uint32{1 << 30}}); err == nil {
		t.Error("a pid that is no process resolved")
	}
	if _, err := tr.Resolve(Spec{Cgroups: []string{"/cowfs-no-such-cgroup"}}); err == nil {
		t.Error("a cgroup that does not exist resolved")
	}
	if _, err := tr.Resolve(Spec{Cgroups: []string{"relative"}}); err == nil {
		t.Error("a relative cgroup path resolved")
	}
	if s, err := tr.Resolve(Spec{}); err != nil || s != nil {
		t.Errorf("an empty spec: %v, %v; want nil (everyone)", s, err)
	}
	if !tr.Agent(nil, 1, 1) {
		t.Error("a nil scope does not hold everyone")
	}
	if tr.Agent(&journal.Scope{Uids: []uint32{7}}, 1, 8) {
		t.Error("another uid is the agent's")
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (a) b (c) S 17 4242 4242 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3\n"
	st, ok := parseStat([]byte(line))
	if !ok || st.ppid != 17 || st.start != 987654 {
		t.Fatalf("parseStat: %+v %v", st, ok)
	}
}
