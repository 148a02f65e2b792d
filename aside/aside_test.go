package aside

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// moveIn creates a file at name in root and moves it aside.
func moveIn(t *testing.T, a *Area, root, name string) string {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	n := a.NewName()
	if err := a.MoveIn(p, n, &st); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSweepFreesWhatNoRecordNames(t *testing.T) {
	root := t.TempDir()
	a, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	kept, lost := moveIn(t, a, root, "kept"), moveIn(t, a, root, "lost")
	n, err := a.Sweep(func(name string) bool { return name == kept })
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 freed", n, err)
	}
	if _, err := os.Lstat(filepath.Join(root, a.Path(kept))); err != nil {
		t.Errorf("kept entry: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, a.Path(lost))); !os.IsNotExist(err) {
		t.Errorf("swept entry still there: %v", err)
	}
	// A reopened area counts only what is left.
	b, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.held.Load(); got != 1 {
		t.Errorf("reopened area holds %d inodes, want 1", got)
	}
}
