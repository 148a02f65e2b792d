package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// holder starts a shell whose working directory is dir (as a user's
// shell in the workspace is) running script. The shell is killed when
// the test ends.
func holder(t *testing.T, dir, script string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script}, args...)...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return cmd
}

// umountCLI runs `cowfs umount ARGS` from dir, as a user would from a
// shell there, giving up (and failing) if it has not returned within a
// while: a umount that hangs is the bug.
func umountCLI(t *testing.T, w *workspace, dir string, args ...string) (out string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cowfsBin, append([]string{"umount"}, args...)...)
	cmd.Dir, cmd.Env = dir, w.env()
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("cowfs umount %v did not return within 30 s: %s", args, b.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return b.String(), code
}

// `cowfs umount` from a shell whose working directory is inside the
// workspace (the README walkthrough's last line) says at once which
// processes hold the mount and leaves it mounted; once they let go it
// unmounts.
func TestUmountBusyNamesHolders(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"sub/f": "x"})
	w.mount()
	// The shell the user typed `cowfs umount` in, and a process with a
	// file open in the workspace.
	shell := holder(t, w.path("sub"), "exec sleep 600")
	f, err := os.Open(w.path("sub/f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	out, code := umountCLI(t, w, w.path("sub"))
	if code != 4 {
		t.Errorf("umount of a busy workspace: exit %d, want 4 (busy): %s", code, out)
	}
	for _, want := range []string{
		"pid " + strconv.Itoa(shell.Process.Pid) + " (sleep)", "working directory",
		"pid " + strconv.Itoa(os.Getpid()), "open file", "--lazy",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("umount of a busy workspace does not say %q:\n%s", want, out)
		}
	}
	if !mounted(w.mnt) {
		t.Fatalf("the refused umount unmounted (or detached) the workspace")
	}
	w.status() // the daemon still serves

	f.Close()
	shell.Process.Kill()
	shell.Wait()
	out, code = umountCLI(t, w, w.path("sub")) // its own directory is no obstacle
	if code != 0 || mounted(w.mnt) {
		t.Fatalf("umount once they let go: exit %d, mounted %v: %s", code, mounted(w.mnt), out)
	}
	if !waitExit(w.pids[0], 10*time.Second) {
		t.Errorf("daemon %d still running after umount", w.pids[0])
	}
}

// `cowfs umount --lazy` detaches the busy mount at once; the process
// still in it keeps working, journaled, and the daemon closes the
// journal and exits when it lets go. The next mount finds that work
// in the journal.
func TestUmountLazy(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "x"})
	w.mount()
	c := ctl.NewClient(w.status().Socket)
	w.cowfs("turn", "begin")
	gate := filepath.Join(t.TempDir(), "go")
	h := holder(t, w.mnt, `while [ ! -e "$0" ]; do sleep 0.05; done; echo late > late.txt`, gate)

	out, code := umountCLI(t, w, w.mnt, "--lazy")
	if code != 0 || !strings.Contains(out, "detached") || !strings.Contains(out, "pid "+strconv.Itoa(h.Process.Pid)) {
		t.Errorf("umount --lazy: exit %d: %s", code, out)
	}
	if mounted(w.mnt) {
		t.Errorf("%s still mounted after umount --lazy", w.mnt)
	}
	pid := w.pids[0]
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("the daemon exited while a process still uses the detached mount")
	}
	if _, err := c.Status(context.Background()); err != nil {
		t.Errorf("status while detached: %v", err)
	}

	// The holder writes through the detached mount, then exits.
	os.WriteFile(gate, nil, 0o644)
	h.Wait()
	if !waitExit(pid, 10*time.Second) {
		t.Fatalf("daemon %d still running 10 s after the last user left", pid)
	}
	if b, err := os.ReadFile(filepath.Join(w.dir, "late.txt")); err != nil || string(b) != "late\n" {
		t.Fatalf("late.txt in the backing directory: %q, %v", b, err)
	}
	w.pids = nil
	w.mount()
	if out := w.cowfs("events"); !strings.Contains(out, "late.txt") {
		t.Errorf("the write made through the detached mount is not in the journal:\n%s", out)
	}
}
