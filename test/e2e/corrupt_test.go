package e2e

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A journal whose database is corrupted at start-up: a clear error that
// says what to do, nothing mounted, nothing in the workspace written.
func TestCorruptJournalRefused(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": "a\n"})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo b > a.txt")
	w.cowfs("turn", "end")
	journal := w.status().Journal
	w.cowfs("umount")
	w.pids = nil

	manifest := filepath.Join(journal, "badger", "MANIFEST")
	f, err := os.OpenFile(manifest, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 64)
	rand.Read(junk)
	f.WriteAt(junk, 8)
	f.Close()
	before := snapshot(t, w.dir)

	_, errOut, code := w.run("mount", "--background", w.dir)
	if code == 0 {
		w.pids = append(w.pids, w.status().Pid)
		t.Fatalf("a corrupted journal was opened")
	}
	if !strings.Contains(errOut, "cannot be opened") || !strings.Contains(errOut, "mv "+journal) {
		t.Errorf("the error does not say what is wrong and what to do: %s", errOut)
	}
	if mounted(w.dir) {
		t.Errorf("%s is mounted", w.dir)
	}
	sameTree(t, w.dir, before, "the workspace after the refused mount")
}
