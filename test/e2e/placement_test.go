package e2e

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountRefused runs `cowfs mount ARGS` in a private mount namespace of
// its own (a mount that the refusal fails to stop stays there, never
// stacks on this machine's / or /usr) and returns its output, its exit
// code and the FUSE mountpoints the namespace held after it. A daemon
// it starts by mistake lives on in that namespace; it is stopped by pid.
func mountRefused(t *testing.T, env []string, args ...string) (out string, code int, fuse []string) {
	t.Helper()
	script := `"$@" 2>&1; rc=$?; echo "--- mounts"; cat /proc/self/mounts; exit $rc`
	cmd := exec.Command("sh", append([]string{"-c", script, "sh", cowfsBin, "mount"}, args...)...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	b, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("cowfs mount %v: %v", args, err)
	}
	out, mounts, _ := strings.Cut(string(b), "--- mounts\n")
	sc := bufio.NewScanner(strings.NewReader(mounts))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 2 && strings.HasPrefix(f[2], "fuse.cowfs") {
			fuse = append(fuse, f[1])
		}
	}
	if code == 0 {
		// Mounted: stop the daemon it names, in its namespace.
		if i := strings.Index(out, "daemon pid "); i >= 0 {
			var pid int
			for _, c := range out[i+len("daemon pid "):] {
				if c < '0' || c > '9' {
					break
				}
				pid = pid*10 + int(c-'0')
			}
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGTERM)
				waitExit(pid, 10*time.Second)
			}
		}
	}
	return out, code, fuse
}

// noJournal is a journal directory that cannot be made: a mount whose
// placement check failed to refuse it stops when it opens the journal,
// before it mounts or writes anything in the workspace (a system
// directory, in these tests).
const noJournal = "/dev/null/cowfs-journal"

// checkRefused fails t unless the mount was refused (exit 8, the words
// given) and left no cowfs mount at dir.
func checkRefused(t *testing.T, out string, code int, fuse []string, dir string, words ...string) {
	t.Helper()
	if code != 8 || !strings.Contains(out, "refused") {
		t.Errorf("exit %d, want 8 and a refusal: %s", code, out)
	}
	for _, w := range words {
		if !strings.Contains(out, w) {
			t.Errorf("the refusal does not say %q: %s", w, out)
		}
	}
	for _, m := range fuse {
		if m == dir {
			t.Errorf("%s was mounted (in the test's private namespace)", dir)
		}
	}
}

// `cowfs mount --background /` (the reproduction), and / as the
// mountpoint of another workspace, are refused with nothing mounted.
func TestMountOverRootRefused(t *testing.T) {
	w := newWorkspace(t)
	for _, args := range [][]string{
		{"--background", "--journal", noJournal, "/"},
		{"--journal", noJournal, "/"}, // in the foreground, daemon.Start's own check
		{"--background", "--journal", noJournal, "--mountpoint", "/", w.dir},
	} {
		out, code, fuse := mountRefused(t, w.env(), args...)
		checkRefused(t, out, code, fuse, "/", "system directory")
	}
}

// System directories are refused however they are named: through a
// symlink (/lib is /usr/lib on a merged-/usr system), the homes, the
// state root's parent /var/lib, and anything beneath /proc, /sys, /dev.
func TestMountOverSystemDirRefused(t *testing.T) {
	w := newWorkspace(t)
	dirs := []string{"/usr", "/etc", "/home", "/root", "/var/lib", "/usr/lib", "/opt", "/mnt", "/proc/sys", "/dev/shm", "/sys/kernel"}
	for _, d := range []string{"/lib", "/bin", "/sbin"} {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			dirs = append(dirs, d) // the symlink's target is what would be mounted
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		t.Run(strings.ReplaceAll(d, "/", "_"), func(t *testing.T) {
			real, _ := filepath.EvalSymlinks(d)
			out, code, fuse := mountRefused(t, w.env(), "--background", "--journal", noJournal, d)
			checkRefused(t, out, code, fuse, real, "system directory")
		})
	}
}

// The parents of the journal and of the state directory, as workspace
// or as mountpoint, are refused: what runs in the workspace could
// delete the journal and every rollback with it.
func TestMountOverStateParentsRefused(t *testing.T) {
	w := newWorkspace(t)
	top := t.TempDir()
	ws := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(filepath.Join(ws, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(top, "link")
	if err := os.Symlink(filepath.Join(ws, "c"), link); err != nil {
		t.Fatal(err)
	}
	stateIn := func(dir string) []string { return append(os.Environ(), "COWFS_STATE_DIR="+dir) }
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		dir  string // what must not be mounted
	}{
		{"workspace is the journal's grandparent", w.env(), []string{"--background", "--journal", filepath.Join(ws, "c", "j"), ws}, ws},
		{"workspace is the journal", w.env(), []string{"--background", "--journal", ws, ws}, ws},
		{"journal through a symlink into the workspace", w.env(), []string{"--background", "--journal", filepath.Join(link, "j"), ws}, ws},
		{"mountpoint is the journal's parent", w.env(), []string{"--background", "--journal", filepath.Join(ws, "j"), "--mountpoint", ws, w.dir}, ws},
		{"workspace is the state root's parent", stateIn(filepath.Join(ws, "state")), []string{"--background", ws}, ws},
		{"workspace is the state root's grandparent", stateIn(filepath.Join(ws, "c", "state")), []string{"--background", ws}, ws},
		{"mountpoint is the state root's parent", stateIn(filepath.Join(ws, "state")), []string{"--background", "--mountpoint", ws, w.dir}, ws},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, ws)
			out, code, fuse := mountRefused(t, tc.env, tc.args...)
			checkRefused(t, out, code, fuse, tc.dir, "lies inside")
			sameTree(t, ws, before, "the workspace after the refused mount")
		})
	}
}
