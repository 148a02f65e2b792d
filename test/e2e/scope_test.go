package e2e

import (
	"bufio"
	"encoding/json"
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

	"github.com/cowfs/cowfs/agent"
	"github.com/cowfs/cowfs/ctl"
)

// The agent's scope: a harness names the processes that are a turn's
// agent; a change any other process makes during the turn (a person's
// editor, here the test process itself or a shell of another uid) is
// journaled but is not the turn's, and no rollback undoes it.

// shell is a shell the test drives, as an agent or a person: it runs
// each line sent to it and says when it is done.
type shell struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startShell starts a driven shell in dir; uid, if not nil, is the uid
// and gid it runs as. It is killed when the test ends.
func startShell(t *testing.T, dir string, uid *uint32) *shell {
	t.Helper()
	cmd := exec.Command("sh", "-c", `while IFS= read -r line; do eval "$line"; echo "done $?"; done`)
	cmd.Dir = dir
	if uid != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: *uid, Gid: *uid}}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &shell{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return a
}

func (a *shell) pid() int { return a.cmd.Process.Pid }

// do runs script in the shell and fails the test unless it succeeds.
func (a *shell) do(script string) {
	a.t.Helper()
	if err := a.try(script); err != nil {
		a.t.Fatal(err)
	}
}

// try runs script in the shell and says how it failed, if it did.
func (a *shell) try(script string) error {
	a.t.Helper()
	if _, err := io.WriteString(a.in, script+"\n"); err != nil {
		return err
	}
	if !a.out.Scan() {
		return fmt.Errorf("the shell ended running %q", script)
	}
	if got := a.out.Text(); got != "done 0" {
		return fmt.Errorf("the shell ran %q: %s", script, got)
	}
	return nil
}

// scopeWorkspace is a mounted workspace with shared.txt, which uid
// nobody (the agent in the uid cases; the person is root) may change
// too.
func scopeWorkspace(t *testing.T, flags ...string) *workspace {
	t.Helper()
	w := newWorkspace(t)
	w.seed(map[string]string{"shared.txt": "old\n"})
	for p := filepath.Dir(w.dir); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // let nobody reach it
	}
	os.Chmod(w.dir, 0o777)
	os.Chmod(filepath.Join(w.dir, "shared.txt"), 0o666)
	w.mount(flags...)
	return w
}

// newCgroup makes a cgroup v2 cgroup for the test, removed at its end
// (once its processes are gone), or skips the test.
func newCgroup(t *testing.T) (path string, join func(pid int)) {
	t.Helper()
	mnt, ok := agent.Cgroup2Mount()
	if !ok {
		skipf(t, "no cgroup v2 hierarchy is mounted")
	}
	dir, err := os.MkdirTemp(mnt, "cowfs-e2e-")
	if err != nil {
		skipf(t, "cannot make a cgroup under %s: %v", mnt, err)
	}
	t.Cleanup(func() {
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if os.Remove(dir) == nil {
				return
			}
		}
		t.Errorf("cgroup %s still holds processes", dir)
	})
	return strings.TrimPrefix(dir, mnt), func(pid int) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			skipf(t, "cannot move a process into a cgroup: %v", err)
		}
	}
}

func skipf(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("COWFS_TEST_DISALLOW_SKIP") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// The case 1: turn begin; the agent writes a.txt; the person's
// editor saves shared.txt; turn end; undo. The person's shared.txt
// stays, the agent's a.txt goes; show, events and diff say whose each
// change is. The person is another uid, a process not descended from
// the agent's, or a process in another cgroup.
func TestPersonsChangeSurvivesUndo(t *testing.T) {
	for _, how := range []string{"uid", "pid", "cgroup"} {
		t.Run(how, func(t *testing.T) {
			w := scopeWorkspace(t)
			var a *shell
			var scope []string
			switch how {
			case "uid":
				a = startShell(t, w.mnt, ptr(uint32(nobody)))
				scope = []string{"--agent-uid", strconv.Itoa(nobody)}
			case "pid":
				a = startShell(t, w.mnt, nil)
				scope = []string{"--agent-pid", strconv.Itoa(a.pid())}
			case "cgroup":
				cg, join := newCgroup(t)
				a = startShell(t, w.mnt, nil)
				join(a.pid())
				scope = []string{"--agent-cgroup", cg}
			}
			var began ctl.Turn
			w.cowfsJSON(&began, append([]string{"turn", "begin"}, scope...)...)
			if began.Agent == nil {
				t.Fatalf("the turn names no agent: %+v", began)
			}
			a.do("echo agent > a.txt")
			if err := os.WriteFile(w.path("shared.txt"), []byte("the person's\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			w.cowfs("turn", "end")

			// show: the agent's change, and the person's apart.
			d := w.turn("1")
			if d.ChangedPaths != 1 || d.NotAgentPaths != 1 || len(d.Changes) != 2 {
				t.Fatalf("show 1: %+v", d)
			}
			for _, c := range d.Changes {
				switch c.Path {
				case "a.txt":
					if !c.ByAgent() || c.Pid != uint32(a.pid()) {
						t.Errorf("a.txt: %+v, want the agent's (pid %d)", c, a.pid())
					}
				case "shared.txt":
					if c.ByAgent() || c.Pid != uint32(os.Getpid()) || c.Command == "" {
						t.Errorf("shared.txt: %+v, want not the agent's, by pid %d", c, os.Getpid())
					}
				}
			}
			if out := w.cowfs("show", "1"); !strings.Contains(out, "not the agent's") {
				t.Errorf("show 1 does not mark the person's change:\n%s", out)
			}
			// events: the person's change is marked, with its process.
			for _, e := range w.changeEvents() {
				wantAgent := e.Path != "shared.txt"
				if got := e.Agent == nil || *e.Agent; got != wantAgent {
					t.Errorf("event %+v: agent %v, want %v", e, got, wantAgent)
				}
				if !wantAgent && e.Pid != uint32(os.Getpid()) {
					t.Errorf("event %+v: pid %d, want the test's %d", e, e.Pid, os.Getpid())
				}
			}
			// diff: the person's file is marked.
			var diff ctl.Diff
			w.cowfsJSON(&diff, "diff", "1")
			for _, f := range diff.Files {
				if got, want := f.Agent == nil, f.Path == "a.txt"; got != want {
					t.Errorf("diff of %s: agent %v, want %v", f.Path, f.Agent, want)
				}
			}

			// undo: the agent's file goes, the person's stays, reported.
			var res ctl.RollbackResult
			w.cowfsJSON(&res, "undo")
			got := byPath(res)
			if got["a.txt"].Action != ctl.ActionDelete {
				t.Errorf("undo of a.txt: %+v", got["a.txt"])
			}
			if s := got["shared.txt"]; s.Action != ctl.ActionSkip || !strings.Contains(s.Reason, "not the turn's agent") {
				t.Errorf("undo of shared.txt: %+v, want skipped as not the agent's change", s)
			}
			w.wantFile("after undo", "shared.txt", "the person's\n")
			w.wantFile("after undo", "a.txt", "")
		})
	}
}

func ptr[T any](v T) *T { return &v }

// changeEvents returns the change events in the window.
func (w *workspace) changeEvents() []ctl.Event {
	w.t.Helper()
	var out []ctl.Event
	dec := json.NewDecoder(strings.NewReader(w.cowfs("events", "--json")))
	for dec.More() {
		var e ctl.Event
		if err := dec.Decode(&e); err != nil {
			w.t.Fatal(err)
		}
		if e.Type == ctl.EventChange {
			out = append(out, e)
		}
	}
	return out
}

// A person's change to a path the agent changed too makes the agent's
// change a conflict: skipped and reported, whichever came first; the
// rest of the turn is undone; --force undoes both.
func TestPersonsChangeConflicts(t *testing.T) {
	for _, order := range []string{"agent first", "person first"} {
		t.Run(order, func(t *testing.T) {
			w := scopeWorkspace(t, "--agent-uid", strconv.Itoa(nobody)) // the mount's default
			a := startShell(t, w.mnt, ptr(uint32(nobody)))
			w.cowfs("turn", "begin")
			person := func() {
				f, err := os.OpenFile(w.path("shared.txt"), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString("person\n")
				f.Close()
			}
			if order == "agent first" {
				a.do("echo agent >> shared.txt")
				person()
			} else {
				person()
				a.do("echo agent >> shared.txt")
			}
			a.do("echo agent > a.txt")
			w.cowfs("turn", "end")
			both, _ := os.ReadFile(w.path("shared.txt"))

			dry := byPath(w.rollback("1", "--dry-run"))
			res := byPath(w.rollback("1"))
			for what, got := range map[string]map[string]ctl.PathAction{"dry run": dry, "rollback": res} {
				if s := got["shared.txt"]; s.Action != ctl.ActionSkip || !strings.Contains(s.Reason, "not the turn's agent") {
					t.Errorf("%s: shared.txt %+v, want skipped", what, s)
				}
				if got["a.txt"].Action != ctl.ActionDelete {
					t.Errorf("%s: a.txt %+v, want deleted", what, got["a.txt"])
				}
			}
			w.wantFile("after the rollback", "shared.txt", string(both))
			w.wantFile("after the rollback", "a.txt", "")
			if out, _, _ := w.run("rollback", "1", "--dry-run"); !strings.Contains(out, "not the turn's agent") {
				t.Errorf("the rollback's text does not say why shared.txt is skipped:\n%s", out)
			}

			w.cowfs("unrevert")
			res = byPath(w.rollback("1", "--force"))
			if res["shared.txt"].Action != ctl.ActionRestore {
				t.Errorf("forced: shared.txt %+v, want restored", res["shared.txt"])
			}
			w.wantFile("after a forced rollback", "shared.txt", "old\n")
		})
	}
}

// The agent named by pid is followed across fork and exec, and a
// daemon it double-forks stays the agent's after it is re-parented away
// from it; the test process, writing beside it, is not the agent.
func TestAgentDescendants(t *testing.T) {
	w := scopeWorkspace(t)
	a := startShell(t, w.mnt, nil)
	signals := t.TempDir() // outside the workspace: the test's own files
	w.cowfs("turn", "begin", "--agent-pid", strconv.Itoa(a.pid()))
	a.do(`sh -c 'echo child > child.txt'`)
	a.do(`sh -c 'exec sh -c "echo exec > exec.txt"'`)
	a.do(`(sh -c 'echo $$ > ` + signals + `/daemon.pid; while [ ! -e ` + signals + `/go ]; do sleep 0.01; done; echo daemon > daemon.txt' &)`)
	daemon := waitPidFile(t, filepath.Join(signals, "daemon.pid"))
	t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })
	for end := time.Now().Add(10 * time.Second); descendsFrom(daemon, a.pid()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the daemon was not re-parented")
		}
	}
	os.WriteFile(filepath.Join(signals, "go"), nil, 0o644)
	for end := time.Now().Add(10 * time.Second); processExists(daemon); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the daemon did not finish")
		}
	}
	if err := os.WriteFile(w.path("person.txt"), []byte("person\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.cowfs("turn", "end")

	whose := map[string]bool{}
	for _, c := range w.turn("1").Changes {
		whose[string(c.Path)] = c.ByAgent()
	}
	want := map[string]bool{"child.txt": true, "exec.txt": true, "daemon.txt": true, "person.txt": false}
	if fmt.Sprint(whose) != fmt.Sprint(want) {
		t.Errorf("whose changes: %v, want %v", whose, want)
	}
	w.cowfs("undo")
	for _, f := range []string{"child.txt", "exec.txt", "daemon.txt"} {
		w.wantFile("after undo", f, "")
	}
	w.wantFile("after undo", "person.txt", "person\n")
}

func waitPidFile(t *testing.T, p string) int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(p)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no pid in %s", p)
	return 0
}

// descendsFrom reports whether process pid descends from ancestor, by
// the parents /proc gives now.
func descendsFrom(pid, ancestor int) bool {
	for p := pid; p > 1; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return false
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 2 {
			return false
		}
		p, _ = strconv.Atoi(f[1])
		if p == ancestor {
			return true
		}
	}
	return false
}

func processExists(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// cowfs run scopes turns to its command: a process that enters its
// mount namespace from outside (nsenter) is not the agent, and a
// rollback of the turn leaves its change.
func TestRunScopesToCommand(t *testing.T) {
	if _, err := exec.LookPath("nsenter"); err != nil {
		skipf(t, "nsenter is not installed")
	}
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "f\n"})
	r := w.start(`echo $PPID; read x; echo agent > a.txt; echo done; read x`, "--turn")
	if !r.lines.Scan() {
		t.Fatalf("cowfs run said nothing: %s", r.stderr.String())
	}
	sandbox := r.lines.Text()
	r.send("")
	r.expect("done")
	person := exec.Command("nsenter", "-t", sandbox, "-m", "--", "sh", "-c", "echo person > '"+w.path("p.txt")+"'")
	if out, err := person.CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}
	r.send("")
	if code := r.wait(); code != 0 {
		t.Fatalf("cowfs run: exit %d: %s", code, r.stderr.String())
	}
	d := w.turn("1")
	if d.Agent == nil || len(d.Agent.Pids) != 1 {
		t.Errorf("the turn's agent: %+v, want the command's pid", d.Agent)
	}
	whose := map[string]bool{}
	for _, c := range d.Changes {
		whose[string(c.Path)] = c.ByAgent()
	}
	if fmt.Sprint(whose) != fmt.Sprint(map[string]bool{"a.txt": true, "p.txt": false}) {
		t.Errorf("whose changes: %v", whose)
	}
	res := byPath(w.rollback("1"))
	if res["a.txt"].Action != ctl.ActionDelete || res["p.txt"].Action != ctl.ActionSkip {
		t.Errorf("rollback: %+v", res)
	}
	w.wantFile("after rollback", "p.txt", "person\n")
	w.wantFile("after rollback", "a.txt", "")
}

// What a harness names must be there: a pid that is no process or a
// cgroup that does not exist is refused (exit 2), and no turn begins.
func TestAgentScopeRefused(t *testing.T) {
	w := scopeWorkspace(t)
	if _, errOut, code := w.run("turn", "begin", "--agent-pid", "1073741824"); code != 2 || !strings.Contains(errOut, "no such process") {
		t.Errorf("turn begin --agent-pid of no process: exit %d: %s", code, errOut)
	}
	if _, errOut, code := w.run("turn", "begin", "--agent-cgroup", "/cowfs-no-such-cgroup"); code != 2 || !strings.Contains(errOut, "cgroup") {
		t.Errorf("turn begin --agent-cgroup that does not exist: exit %d: %s", code, errOut)
	}
	if st := w.status(); st.OpenTurn != nil {
		t.Errorf("a refused turn began: %+v", st.OpenTurn)
	}
}

// A write through a shared mapping reaches the daemon with pid 0 when
// the kernel writes the page back; it is the process's that maps the
// file: the person's if the person maps it, the agent's if the agent
// does.
func TestMappedWriteScope(t *testing.T) {
	for _, who := range []string{"person", "agent"} {
		t.Run(who, func(t *testing.T) {
			w := scopeWorkspace(t)
			if err := os.WriteFile(w.path("m.bin"), bytes8k('A'), 0o644); err != nil {
				t.Fatal(err)
			}
			m := startMapper(t, w.path("m.bin"), 8192)
			a := startShell(t, w.mnt, nil)
			scope := a.pid()
			if who == "agent" {
				scope = m.cmd.Process.Pid
			}
			w.cowfs("turn", "begin", "--agent-pid", strconv.Itoa(scope))
			m.must("fill B") // written back at once (msync), with pid 0
			if who == "person" {
				a.do("echo agent > a.txt")
			}
			w.cowfs("turn", "end")
			for _, c := range w.turn("1").Changes {
				if c.Path != "m.bin" {
					continue
				}
				if c.ByAgent() != (who == "agent") || c.Pid != uint32(m.cmd.Process.Pid) {
					t.Errorf("m.bin: %+v, want the %s's (the mapper, pid %d)", c, who, m.cmd.Process.Pid)
				}
			}
			res := byPath(w.rollback("1"))
			if who == "person" {
				if res["m.bin"].Action != ctl.ActionSkip {
					t.Errorf("rollback of the person's mapped write: %+v", res["m.bin"])
				}
				if got := w.fileRuns("m.bin"); got != "B*8192" {
					t.Errorf("m.bin after the rollback: %s, want the person's B*8192", got)
				}
			} else if got := w.fileRuns("m.bin"); got != "A*8192" {
				t.Errorf("m.bin after the rollback: %s, want A*8192 again", got)
			}
		})
	}
}

func bytes8k(c byte) []byte { return []byte(strings.Repeat(string(c), 8192)) }

// A turn's scope survives a restart of the daemon mid-turn: the agent
// named by pid is still the agent (its descendants found again), the
// test process still is not.
func TestAgentScopeAfterRestart(t *testing.T) {
	w := scopeWorkspace(t)
	a := startShell(t, "/", nil) // not in the mount, which the restart unmounts
	w.cowfs("turn", "begin", "--agent-pid", strconv.Itoa(a.pid()))
	a.do("(cd '" + w.mnt + "' && echo before > before.txt)")
	w.cowfs("umount")
	w.pids = nil
	w.mount()
	a.do("(cd '" + w.mnt + "' && sh -c 'echo after > after.txt')")
	if err := os.WriteFile(w.path("person.txt"), []byte("person\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.cowfs("turn", "end")
	whose := map[string]bool{}
	for _, c := range w.turn("1").Changes {
		whose[string(c.Path)] = c.ByAgent()
	}
	if want := map[string]bool{"before.txt": true, "after.txt": true, "person.txt": false}; fmt.Sprint(whose) != fmt.Sprint(want) {
		t.Errorf("whose changes across a restart: %v, want %v", whose, want)
	}
}
