package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// cowfs purge removes the journal, the state directory and the private
// directory; it is refused while a daemon serves the workspace, follows
// no link planted in what it removes, and leaves a foreign .cowfs alone.
func TestPurge(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "k\n", "gone.txt": "g\n"})
	w.mount()
	state := filepath.Dir(w.status().Socket)
	w.cowfs("turn", "begin")
	w.sh(`rm gone.txt; echo new > new.txt`)
	w.cowfs("turn", "end")

	if _, errOut, code := w.run("purge"); code != 4 {
		t.Fatalf("purge while mounted: exit %d (%s), want %d", code, errOut, 4)
	}
	if _, err := os.Stat(filepath.Join(state, "journal")); err != nil {
		t.Fatalf("the refused purge removed the journal: %v", err)
	}
	w.cowfs("umount")

	// Links planted in what purge removes point at what it must not.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "precious"), []byte("p"), 0o644)
	for _, l := range []string{filepath.Join(state, "trap"), filepath.Join(w.dir, ".cowfs", "aside", "trap"), filepath.Join(state, "journal", "trap")} {
		if err := os.Symlink(outside, l); err != nil {
			t.Fatal(err)
		}
	}
	out := w.cowfs("purge")
	for _, p := range []string{filepath.Join(w.dir, ".cowfs"), filepath.Join(state, "journal"), state} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after purge (%v)", p, err)
		}
		if !strings.Contains(out, "removed "+p+"\n") {
			t.Errorf("purge does not say it removed %s: %q", p, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(b) != "p" {
		t.Errorf("purge reached through a link: %q %v", b, err)
	}
	w.wantFile("after purge", "keep.txt", "k\n")
	w.wantFile("after purge", "new.txt", "new\n")
	if _, errOut, code := w.run("purge"); code != 0 || !strings.Contains(errOut, "nothing to purge") {
		t.Errorf("purge again: exit %d: %s", code, errOut)
	}

	// A fresh start: no turns.
	w.mount()
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if len(l.Turns) != 0 {
		t.Errorf("turns after purge: %+v", l.Turns)
	}
	w.cowfs("umount")

	// A .cowfs that is not cowfs's is left alone.
	foreign := filepath.Join(w.dir, ".cowfs")
	os.RemoveAll(foreign)
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "mine"), []byte("x"), 0o644)
	if _, errOut, code := w.run("purge"); code == 0 || !strings.Contains(errOut, "cowfs did not make") && !strings.Contains(errOut, "mode") {
		t.Errorf("purge of a foreign .cowfs: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(foreign, "mine")); err != nil {
		t.Errorf("purge removed a foreign .cowfs: %v", err)
	}
}

// DELETE /v1/journal stops the daemon and purges, in one request, as a
// harness throws a workspace's history away: refused while a turn is
// open or processes use the mount (named), then everything goes and the
// daemon exits; cowfs purge --stop does the same from the CLI.
func TestPurgeOverSocket(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "k\n"})
	w.mount()
	st := w.status()
	state := filepath.Dir(st.Socket)
	c := ctl.NewClient(st.Socket)
	ctx := context.Background()
	w.cowfs("turn", "begin")
	w.sh(`echo new > new.txt; rm keep.txt`)

	if _, err := c.Purge(ctx); !errors.Is(err, &ctl.Error{Code: ctl.CodeBusy}) || !strings.Contains(err.Error(), "open") {
		t.Errorf("purge with a turn open: %v, want busy", err)
	}
	w.cowfs("turn", "end")
	shell := holder(t, w.path(""), "exec sleep 600")
	_, err := c.Purge(ctx)
	if !errors.Is(err, &ctl.Error{Code: ctl.CodeBusy}) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(shell.Process.Pid)) {
		t.Errorf("purge while a process uses the mount: %v, want busy naming pid %d", err, shell.Process.Pid)
	}
	if _, err := os.Stat(filepath.Join(state, "journal")); err != nil || !mounted(w.mnt) {
		t.Fatalf("a refused purge changed something: journal %v, mounted %v", err, mounted(w.mnt))
	}
	w.cowfs("rollback", "1") // the daemon still serves
	shell.Process.Kill()
	shell.Wait()

	p, err := c.Purge(ctx)
	if err != nil {
		t.Fatalf("purge: %v", err)
	}
	want := []string{filepath.Join(w.dir, ".cowfs"), filepath.Join(state, "journal"), state}
	if !slices.Equal(p.Removed, want) {
		t.Errorf("purge removed %q, want %q", p.Removed, want)
	}
	for _, q := range want {
		if _, err := os.Lstat(q); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the purge (%v)", q, err)
		}
	}
	if !waitExit(st.Pid, 10*time.Second) {
		t.Errorf("daemon %d still running after the purge", st.Pid)
	}
	if mounted(w.mnt) {
		t.Errorf("still mounted after the purge")
	}
	w.wantFile("after the purge", "keep.txt", "k\n") // as the rollback left it

	// From the CLI.
	w.mount()
	state = filepath.Dir(w.status().Socket)
	if _, errOut, code := w.run("purge"); code != 4 {
		t.Errorf("purge without --stop while mounted: exit %d (%s), want 4", code, errOut)
	}
	out := w.cowfs("purge", "--stop")
	if !strings.Contains(out, "removed "+filepath.Join(state, "journal")) || mounted(w.mnt) {
		t.Errorf("purge --stop: mounted %v, said %q", mounted(w.mnt), out)
	}
	if _, err := os.Lstat(state); !os.IsNotExist(err) {
		t.Errorf("state directory still there after purge --stop (%v)", err)
	}
}
