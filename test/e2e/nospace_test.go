package e2e

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// When the journal cannot record a change, the change fails with an
// error and the workspace is untouched; the daemon stays up and records
// what still fits.
func TestJournalFullRefusesChanges(t *testing.T) {
	w := newWorkspace(t)
	jfs := filepath.Join(t.TempDir(), "journalfs")
	os.Mkdir(jfs, 0o700)
	if err := syscall.Mount("tmpfs", jfs, "tmpfs", 0, "size=128m"); err != nil {
		testenv.Skip(t, "cannot mount a tmpfs for the journal: "+err.Error())
	}
	// Registered after newWorkspace's cleanup, so it runs before it:
	// unmount the workspace first, then its journal's filesystem.
	t.Cleanup(func() {
		w.cleanup()
		w.pids = nil
		if err := syscall.Unmount(jfs, 0); err != nil {
			syscall.Unmount(jfs, syscall.MNT_DETACH)
		}
	})
	big := make([]byte, 100<<20)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(w.dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	w.mount("--journal", filepath.Join(jfs, "journal"))
	w.cowfs("turn", "begin")

	// Keeping 100 MiB of incompressible pre-image does not fit.
	out, err := exec.Command("truncate", "-s", "0", w.path("big.bin")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left") {
		t.Fatalf("truncate of a file whose pre-image does not fit: %v %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "big.bin")); !bytes.Equal(b, big) {
		t.Fatalf("big.bin changed although its pre-image could not be journaled")
	}
	// Small changes still fit and are recorded.
	w.sh("echo small > small.txt")
	d := w.turn("1")
	if len(d.Changes) != 1 || d.Changes[0].Path != "small.txt" {
		t.Fatalf("changes: %+v", d.Changes)
	}
}
