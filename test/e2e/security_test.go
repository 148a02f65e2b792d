package e2e

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// The workspace's contents come from anywhere and the daemon runs as
// root: each test here plants what an attacker could, next to a canary
// directory outside the workspace that must come out byte-identical.

// newCanary makes a directory outside the workspace with a file and a
// subdirectory in it, and registers a check that the test leaves it
// exactly as it was.
func newCanary(t *testing.T, w *workspace) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(w.dir), "canary")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "victim"), []byte("root's precious file\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("more\n"), 0o600)
	before := snapshot(t, dir)
	t.Cleanup(func() { sameTree(t, dir, before, "the canary outside the workspace") })
	return dir
}

// withMountpoint mounts the view beside the backing directory, which
// then stays reachable for what changes it behind cowfs's back.
func withMountpoint(w *workspace) {
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	os.Mkdir(w.mnt, 0o755)
}

// A .cowfs that came with the workspace is refused with a clear error;
// nothing it points to is deleted or written.
func TestForeignPrivateDirRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(ws, canary string) error
	}{
		{"aside is a symlink out", func(ws, canary string) error {
			if err := os.Mkdir(filepath.Join(ws, ".cowfs"), 0o700); err != nil {
				return err
			}
			return os.Symlink(canary, filepath.Join(ws, ".cowfs", "aside"))
		}},
		{"README is a symlink out", func(ws, canary string) error {
			if err := os.Mkdir(filepath.Join(ws, ".cowfs"), 0o700); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(canary, "victim"), filepath.Join(ws, ".cowfs", "README"))
		}},
		{".cowfs is a symlink out", func(ws, canary string) error {
			return os.Symlink(canary, filepath.Join(ws, ".cowfs"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t)
			canary := newCanary(t, w)
			w.seed(map[string]string{"main.go": "package main\n"})
			if err := tc.plant(w.dir, canary); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, w.dir)
			_, errOut, code := w.run("mount", "--background", w.dir)
			if code != 8 || !strings.Contains(errOut, ".cowfs") || !strings.Contains(errOut, "mv ") {
				t.Errorf("mount over a planted .cowfs: exit %d, want 8 and how to move it away: %s", code, errOut)
			}
			if mounted(w.dir) {
				t.Errorf("%s was mounted", w.dir)
				w.pids = append(w.pids, w.status().Pid)
			}
			sameTree(t, w.dir, before, "the workspace after the refused mount")
		})
	}
}

// An aside entry replaced behind cowfs's back does not come back into
// the workspace.
func TestTamperedAsideEntryNotRecovered(t *testing.T) {
	w := newWorkspace(t)
	withMountpoint(w)
	canary := newCanary(t, w)
	w.seed(map[string]string{"a.txt": "precious\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("rm a.txt")
	w.cowfs("turn", "end")

	area := filepath.Join(w.dir, ".cowfs", "aside")
	entries, err := os.ReadDir(area)
	if err != nil || len(entries) != 1 {
		t.Fatalf("aside area: %v, %v", entries, err)
	}
	kept := filepath.Join(area, entries[0].Name())
	os.Remove(kept)
	if err := os.Symlink(canary, kept); err != nil {
		t.Fatal(err)
	}

	res := w.rollback("1")
	if a := actions(res); a["a.txt"] != "skip" {
		t.Errorf("a.txt: %q, want skip (%+v)", a["a.txt"], res.Paths)
	}
	if fi, err := os.Lstat(filepath.Join(w.dir, "a.txt")); err == nil {
		t.Errorf("the tampered entry came back as a.txt (%s)", fi.Mode())
	}
}

// The journal and the state directory never sit where the agent can
// reach them. (System directories: placement_test.go, in a private
// mount namespace.)
func TestStatePlacementRefused(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "x"})
	other := t.TempDir()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		dir  string // what must not be mounted
	}{
		{"journal inside the workspace", nil, []string{"--journal", filepath.Join(w.dir, ".journal"), w.dir}, w.dir},
		{"journal deep inside the workspace", nil, []string{"--journal", filepath.Join(w.dir, "a", "b"), w.dir}, w.dir},
		{"workspace inside the journal", nil, []string{"--journal", other, filepath.Join(other, "ws")}, filepath.Join(other, "ws")},
		{"state directory inside the workspace", []string{"COWFS_STATE_DIR=" + filepath.Join(w.dir, "state")}, []string{w.dir}, w.dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.MkdirAll(filepath.Join(other, "ws"), 0o755)
			before := snapshot(t, w.dir)
			cmd := exec.Command(cowfsBin, append([]string{"mount", "--background"}, tc.args...)...)
			cmd.Env = append(w.env(), tc.env...)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 8 || !strings.Contains(string(out), "refused") {
				t.Errorf("mount %v: %v, want exit 8 and a refusal: %s", tc.args, err, out)
			}
			if mounted(tc.dir) {
				t.Errorf("%s was mounted", tc.dir)
				syscall.Unmount(tc.dir, syscall.MNT_DETACH)
			}
			sameTree(t, w.dir, before, "the workspace after the refused mount")
		})
	}
}

// A journal deleted while mounted: changes that need a record fail with
// EIO, status and the events say why, and umount still stops the daemon.
func TestJournalDeletedWhileMounted(t *testing.T) {
	w := newWorkspace(t)
	files := map[string]string{}
	for _, c := range "abcdefghijklmnopqrst" {
		files[string(c)] = "before\n"
	}
	w.seed(files)
	jdir := filepath.Join(t.TempDir(), "journal")
	w.mount("--journal", jdir)
	c := ctl.NewClient(w.status().Socket)
	f := follow(t, c, 0)
	defer f.stop()
	w.cowfs("turn", "begin")
	w.sh("echo changed >> a")
	if err := os.RemoveAll(jdir); err != nil {
		t.Fatal(err)
	}
	// Each file is touched for the first time in the turn, so each
	// write needs a record.
	var werr error
	for _, c := range "bcdefghijklmnopqrst" {
		werr = appendTo(w.path(string(c)), "lost?\n")
		if werr != nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if !errors.Is(werr, syscall.EIO) {
		t.Fatalf("writes after the journal was deleted: %v, want EIO", werr)
	}
	if st := w.status(); !strings.Contains(st.JournalError, "deleted") {
		t.Errorf("status journal_error = %q", st.JournalError)
	}
	f.waitFor(t, "journal_error event", func(e ctl.Event) bool {
		return e.Type == ctl.EventJournalError && strings.Contains(e.Message, "deleted")
	})
	umountStopsDaemon(t, w)
}

// umountStopsDaemon checks that umount returns, and the daemon exits,
// even with its journal unusable.
func umountStopsDaemon(t *testing.T, w *workspace) {
	t.Helper()
	pid := w.pids[0]
	done := make(chan struct{})
	go func() { w.run("umount"); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("umount did not return within 30 s")
	}
	if !waitExit(pid, 10*time.Second) {
		t.Errorf("daemon %d still runs after umount", pid)
	}
}

// appendTo appends s to the file at p.
func appendTo(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// nobody is the unprivileged user tests run commands as.
const nobody = 65534

// A directory swapped for a symlink out of the workspace, behind the
// mount's back, while a shell works in it: what the shell then changes
// reaches the directory's own inode or fails, never the symlink's
// target.
func TestSwappedDirectoryStaysInside(t *testing.T) {
	w := newWorkspace(t)
	withMountpoint(w)
	canary := newCanary(t, w)
	w.seed(map[string]string{"d/f": "inside\n", "d/g": "g\n", "e/f": "inside e\n"})
	// The shells run as an unprivileged user, who may write the
	// workspace but not the canary: only the root daemon could reach it.
	filepath.Walk(w.dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
	top := filepath.Dir(w.dir)
	os.Chmod(top, 0o755)
	os.Chmod(filepath.Dir(top), 0o755)
	w.mount()
	w.cowfs("turn", "begin")
	// Each shell's working directory keeps the kernel's entry for its
	// directory, so what it does there reaches the daemon as requests
	// on that directory's node.
	scripts := map[string]string{
		"d": "echo changed > f; echo changed >> g; rm g; mkdir new; touch new2; chmod 600 f; " +
			"mv f moved; ln -s /etc link; setfattr -n user.x -v 1 moved; ls >/dev/null",
		"e": "truncate -s 0 f; echo x > f; rm f; mkdir sub; rmdir sub",
	}
	var shells []*exec.Cmd
	var inputs []io.WriteCloser
	for dir, script := range scripts {
		cmd := exec.Command("sh", "-c", "read go; "+script)
		cmd.Dir = filepath.Join(w.mnt, dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		shells, inputs = append(shells, cmd), append(inputs, in)
	}
	time.Sleep(200 * time.Millisecond) // the shells are in their directories
	for dir := range scripts {
		os.Rename(filepath.Join(w.dir, dir), filepath.Join(w.dir, dir+".real"))
		os.Symlink(canary, filepath.Join(w.dir, dir))
	}
	for i, cmd := range shells {
		io.WriteString(inputs[i], "go\n")
		inputs[i].Close()
		cmd.Wait() // each command may fail; none may reach the canary
	}
	w.cowfs("turn", "end")
	w.rollback("1", "--force")
}
