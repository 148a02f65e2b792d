package backing

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStater: a Stater stats what Lstat stats, from the directories it
// keeps open, never following a link — neither the last component nor
// a directory on the way out of the root.
func TestStater(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	for _, d := range []string{root + "/a/b", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(root+"/a/f", []byte("f"), 0o644)
	os.WriteFile(root+"/a/b/g", []byte("g"), 0o644)
	os.WriteFile(outside+"/secret", []byte("s"), 0o644)
	os.Symlink("f", root+"/a/link")
	os.Symlink(outside, root+"/a/out")
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	tree := NewTree(fd)
	s := tree.NewStater()
	defer s.Close()
	for _, rel := range []string{"a/f", "a/b/g", "a/link", "a", "", "a/out", "a/b", "a/f"} {
		got, err := s.Lstat(rel)
		if err != nil {
			t.Fatalf("%q: %v", rel, err)
		}
		want, err := tree.Lstat(rel)
		if err != nil {
			t.Fatal(err)
		}
		if got.Ino != want.Ino || got.Mode != want.Mode {
			t.Errorf("%q: ino %d mode %o, want %d %o", rel, got.Ino, got.Mode, want.Ino, want.Mode)
		}
	}
	if _, err := s.Lstat("a/out/secret"); err == nil {
		t.Error("a/out/secret: stat'ed through a link out of the root")
	}
	if _, err := s.Lstat("a/../../outside/secret"); err == nil {
		t.Error("a/../../outside/secret: stat'ed out of the root")
	}
	if _, err := s.Lstat("a/missing"); !errors.Is(err, unix.ENOENT) {
		t.Errorf("a/missing: %v, want ENOENT", err)
	}
}
