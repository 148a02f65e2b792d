package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/test/testenv"
)

// workspace is a temporary workspace with its own state directory.
type workspace struct {
	t     testing.TB
	dir   string // the workspace (backing directory, and mountpoint unless mnt is set)
	mnt   string // where the view is mounted
	state string // COWFS_STATE_DIR for every command
	pids  []int  // daemons this test started
	// daemonEnv is added to the environment of the daemons mount starts.
	daemonEnv []string
	// inherit are descriptors cowfs mount and cowfs run inherit from
	// the test, as from a careless parent (fdleak_test.go).
	inherit []*os.File
}

func newWorkspace(t testing.TB) *workspace {
	t.Helper()
	testenv.NeedFUSE(t)
	root := t.TempDir()
	w := &workspace{t: t, dir: filepath.Join(root, "ws"), state: filepath.Join(root, "state")}
	w.mnt = w.dir
	if err := os.Mkdir(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.cleanup)
	return w
}

// path returns the path of rel in the mounted view.
func (w *workspace) path(rel string) string { return filepath.Join(w.mnt, rel) }

func (w *workspace) env() []string {
	return append(os.Environ(), "COWFS_STATE_DIR="+w.state)
}

// run runs the cowfs CLI with -w set to the mountpoint and returns its
// stdout, stderr and exit code.
func (w *workspace) run(args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	return w.cli(append([]string{"-w", w.mnt}, args...)...)
}

// cli runs the cowfs CLI with args as they are, in the workspace's
// environment, and returns its stdout, stderr and exit code.
func (w *workspace) cli(args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	cmd := exec.Command(cowfsBin, args...)
	cmd.Env = w.env()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		w.t.Fatalf("cowfs %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// cowfs runs the CLI and fails the test if it fails.
func (w *workspace) cowfs(args ...string) string {
	w.t.Helper()
	out, errOut, code := w.run(args...)
	if code != 0 {
		w.t.Fatalf("cowfs %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// cowfsJSON runs the CLI with --json and decodes its output into v.
func (w *workspace) cowfsJSON(v any, args ...string) {
	w.t.Helper()
	out := w.cowfs(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		w.t.Fatalf("cowfs %v: bad JSON %q: %v", args, out, err)
	}
}

// mount starts a background daemon for the workspace with extra flags.
func (w *workspace) mount(flags ...string) {
	w.t.Helper()
	args := append([]string{"mount", "--background"}, flags...)
	if os.Getenv("COWFS_TEST_DEBUG") != "" {
		args = append(args, "--debug") // every FUSE request in the daemon's log
	}
	if w.mnt != w.dir {
		args = append(args, "--mountpoint", w.mnt)
	}
	cmd := exec.Command(cowfsBin, append(args, w.dir)...)
	cmd.Env = append(w.env(), w.daemonEnv...)
	cmd.ExtraFiles = w.inherit
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("cowfs mount: %v: %s", err, out)
	}
	w.pids = append(w.pids, w.status().Pid)
}

func (w *workspace) status() ctl.Status {
	w.t.Helper()
	var st ctl.Status
	w.cowfsJSON(&st, "status")
	return st
}

// sh runs a shell script in the mounted workspace.
func (w *workspace) sh(script string) string {
	w.t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = w.mnt
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("sh -c %q: %v: %s", script, err, out)
	}
	return string(out)
}

// write creates a file with content in the backing directory, before
// the mount: the state a workspace starts from.
func (w *workspace) seed(files map[string]string) {
	w.t.Helper()
	for rel, content := range files {
		p := filepath.Join(w.dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *workspace) turn(n string) ctl.TurnDetail {
	w.t.Helper()
	var d ctl.TurnDetail
	w.cowfsJSON(&d, "show", n)
	return d
}

// cleanup unmounts, ends the daemons this test started (by pid, if they
// outlive the unmount) and fails the test if a mount is left behind.
func (w *workspace) cleanup() {
	if w.t.Failed() {
		// The daemons' logs say what they saw.
		logs, _ := filepath.Glob(filepath.Join(w.state, "*", "daemon.log"))
		if d := os.Getenv("COWFS_TEST_KEEP_LOGS"); d != "" {
			for i, l := range logs {
				b, _ := os.ReadFile(l)
				os.WriteFile(filepath.Join(d, fmt.Sprintf("%s-%d.log", strings.ReplaceAll(w.t.Name(), "/", "_"), i)), b, 0o644)
			}
		}
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			w.t.Logf("%s (last lines):\n%s", l, strings.Join(lines[max(0, len(lines)-200):], "\n"))
		}
	}
	if len(w.pids) > 0 {
		w.run("umount")
	}
	for _, pid := range w.pids {
		if !waitExit(pid, 10*time.Second) {
			w.t.Errorf("daemon %d still running 10s after umount; killing it", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, p := range []string{w.mnt, w.dir} {
		if mounted(p) {
			w.t.Errorf("%s is still mounted after the test; detaching it", p)
			syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
}

// mounted reports whether a FUSE filesystem is mounted at path.
func mounted(path string) bool {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 2 && fields[1] == path && strings.HasPrefix(fields[2], "fuse") {
			return true
		}
	}
	return false
}

// waitExit waits up to d for process pid (a daemon this test started,
// not its child) to exit, and reports whether it did.
func waitExit(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if daemon.Exited(pid) {
			return true
		}
	}
	return daemon.Exited(pid)
}

// pauseRollbacks makes the daemons mount starts pause every rollback
// after its step n, until resume is called; paused waits for the pause.
func (w *workspace) pauseRollbacks(n int) (paused func(), resume func()) {
	p := w.pauseAt(n)
	return p.wait, p.resume
}

// rollbackPause is a pause the daemons mount starts make after step n
// of every rollback and unrevert (COWFS_TEST_ROLLBACK_PAUSE).
type rollbackPause struct {
	w   *workspace
	dir string
	n   int
}

func (w *workspace) pauseAt(n int) *rollbackPause {
	p := &rollbackPause{w: w, dir: w.t.TempDir(), n: n}
	w.daemonEnv = append(w.daemonEnv, fmt.Sprintf("COWFS_TEST_ROLLBACK_PAUSE=%d:%s", n, p.dir))
	w.t.Cleanup(p.resume) // never leave a daemon paused
	return p
}

// reached reports whether a rollback is paused there.
func (p *rollbackPause) reached() bool {
	_, err := os.Stat(filepath.Join(p.dir, "paused"))
	return err == nil
}

// wait waits up to a minute for a rollback to pause there.
func (p *rollbackPause) wait() {
	p.w.t.Helper()
	for end := time.Now().Add(time.Minute); !p.reached(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			p.w.t.Fatalf("no rollback reached step %d", p.n)
		}
	}
}

func (p *rollbackPause) resume() { os.WriteFile(filepath.Join(p.dir, "resume"), nil, 0o644) }

// killDuringRollback runs `cowfs rollback ARGS`, waits until the daemon
// (pid) pauses it (pauseRollbacks), kills the daemon and waits until it
// is gone.
func (w *workspace) killDuringRollback(pid int, paused func(), args ...string) {
	w.t.Helper()
	rb := exec.Command(cowfsBin, append([]string{"-w", w.mnt, "rollback"}, args...)...)
	rb.Env = w.env()
	if err := rb.Start(); err != nil {
		w.t.Fatal(err)
	}
	paused()
	w.killDaemon(pid)
	rb.Wait()
}

// killDaemon kills daemon pid with SIGKILL, waits until it is gone, and
// forgets the daemons this test started (they are all gone or dead).
func (w *workspace) killDaemon(pid int) {
	w.t.Helper()
	syscall.Kill(pid, syscall.SIGKILL)
	if !waitExit(pid, 10*time.Second) {
		w.t.Fatalf("daemon %d survived SIGKILL", pid)
	}
	w.pids = nil
}
