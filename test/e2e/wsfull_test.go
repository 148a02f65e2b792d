package e2e

import (
	"crypto/rand"
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
