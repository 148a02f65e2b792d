package e2e

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// The workspace's own filesystem fills up during a turn: the writer
// gets ENOSPC, the daemon stays up, and the turn still rolls back
// exactly.
func TestWorkspaceFilesystemFull(t *testing.T) {
	w := newWorkspace(t)
	if err := syscall.Mount("tmpfs", w.dir, "tmpfs", 0, "size=24m"); err != nil {
		testenv.Skip(t, "cannot mount a tmpfs for the workspace: "+err.Error())
	}
	t.Cleanup(func() {
		w.cleanup()
		w.pids = nil
		if err := syscall.Unmount(w.dir, 0); err != nil {
			syscall.Unmount(w.dir, syscall.MNT_DETACH)
		}
	})
	old := make([]byte, 4<<20)
	rand.Read(old)
	if err := os.WriteFile(filepath.Join(w.dir, "old.bin"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	w.seed(map[string]string{"small.txt": "small\n"})
	w.mount()
	before := snapshot(t, w.mnt)
	w.cowfs("turn", "begin")
	w.sh("head -c 4194304 /dev/urandom > old.bin; echo changed > small.txt")
	out, err := shellIn(w, "dd if=/dev/zero of=fill bs=1M count=64").CombinedOutput()
	if err == nil {
		t.Fatalf("filling a 24 MiB workspace with 64 MiB succeeded: %s", out)
	}
	if _, err := os.Stat(w.path("small.txt")); err != nil {
		t.Fatalf("the daemon is gone after ENOSPC: %v", err)
	}
	w.cowfs("turn", "end")
	res, code := rollbackJSON(w, "1")
	if code != 0 || !res.Complete {
		t.Fatalf("rollback on a full workspace: exit %d, %+v", code, res)
	}
	sameTree(t, w.mnt, before, "after rolling back the turn that filled the workspace")
}

// Both filesystems full at once: the workspace's (a writer filled it)
// and the journal's (something else filled it). A change whose
// pre-image cannot be journaled fails with ENOSPC and leaves its file as
// it was, the daemon stays up, and the turn rolls back exactly: at once,
// or — if the rollback cannot journal what it overwrites — partly, then
// fully once the journal's filesystem has room.
func TestBothFilesystemsFull(t *testing.T) {
	w := newWorkspace(t)
	if err := syscall.Mount("tmpfs", w.dir, "tmpfs", 0, "size=24m"); err != nil {
		testenv.Skip(t, "cannot mount a tmpfs for the workspace: "+err.Error())
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(w.dir, 0); err != nil {
			syscall.Unmount(w.dir, syscall.MNT_DETACH)
		}
	})
	// Registered after the workspace's unmount, so it runs before it.
	jdir := journalFS(t, w, "64m")
	for _, name := range []string{"old.bin", "other.bin"} {
		if err := os.WriteFile(filepath.Join(w.dir, name), randomFile(4<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.seed(map[string]string{"small.txt": "small\n"})
	w.mount("--journal", jdir)
	before := snapshot(t, w.mnt)
	w.cowfs("turn", "begin")
	w.sh("head -c 4194304 /dev/urandom > old.bin; echo changed > small.txt")
	if out, err := shellIn(w, "dd if=/dev/zero of=fill bs=1M count=64").CombinedOutput(); err == nil {
		t.Fatalf("filling a 24 MiB workspace with 64 MiB succeeded: %s", out)
	}
	var fs syscall.Statfs_t
	jfs := filepath.Dir(jdir)
	syscall.Statfs(jfs, &fs)
	ballast := filepath.Join(jfs, "ballast")
	if err := os.WriteFile(ballast, make([]byte, int64(fs.Bavail)*fs.Bsize-(2<<20)), 0o600); err != nil {
		t.Fatal(err)
	}

	// Overwriting other.bin in place takes no space in the workspace,
	// but its 4 MiB pre-image does not fit in the journal.
	backing, _ := os.ReadFile(filepath.Join(w.dir, "other.bin"))
	f, err := os.OpenFile(w.path("other.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, werr := f.WriteAt(randomFile(4<<20), 0)
	f.Close()
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("overwrite with both filesystems full: %v, want ENOSPC", werr)
	}
	if now, _ := os.ReadFile(filepath.Join(w.dir, "other.bin")); !bytes.Equal(now, backing) {
		t.Fatalf("other.bin changed although its pre-image could not be journaled")
	}
	if _, err := os.Stat(w.path("small.txt")); err != nil {
		t.Fatalf("the daemon is gone with both filesystems full: %v", err)
	}
	w.cowfs("turn", "end")

	res, code := rollbackJSON(w, "1")
	if code != 0 || !res.Complete {
		// Partial: it says so, and finishes once the journal has room.
		if code != 9 || res.Complete {
			t.Fatalf("rollback with both filesystems full: exit %d, %+v", code, res)
		}
		t.Logf("rollback with both filesystems full stopped partial: %+v", res.Failure)
		os.Remove(ballast)
		if res, code = rollbackJSON(w, "1"); code != 0 || !res.Complete {
			t.Fatalf("rollback retried once the journal had room: exit %d, %+v", code, res)
		}
	}
	sameTree(t, w.mnt, before, "after rolling back the turn with both filesystems full")
}
