package aside

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
	"golang.org/x/sys/unix"
)

// openRoot opens dir as a backing root.
func openRoot(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func open(t *testing.T, root int, token string) *Area {
	t.Helper()
	a, err := Open(root, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// moveIn creates a file at name in root and moves it aside.
func moveIn(t *testing.T, a *Area, root int, dir, name string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(root, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	n := a.NewName()
	if err := a.MoveIn(root, name, n, &st); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSweepFreesWhatNoRecordNames(t *testing.T) {
	dir := t.TempDir()
	root := openRoot(t, dir)
	a := open(t, root, "tok")
	kept, lost := moveIn(t, a, root, dir, "kept"), moveIn(t, a, root, dir, "lost")
	n, err := a.Sweep(func(name string) bool { return name == kept })
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 freed", n, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, a.Path(kept))); err != nil {
		t.Errorf("kept entry: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, a.Path(lost))); !os.IsNotExist(err) {
		t.Errorf("swept entry still there: %v", err)
	}
	// A reopened area counts only what is left.
	b := open(t, root, "tok")
	if got := b.held.Load(); got != 1 {
		t.Errorf("reopened area holds %d inodes, want 1", got)
	}
}

// A private directory cowfs did not make for this journal is refused,
// and nothing it leads to — inside the workspace or out — is touched.
func TestForeignPrivateDirRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, ws, canary string)
	}{
		{"symlinked dir", func(t *testing.T, ws, canary string) {
			must(t, os.Symlink(canary, filepath.Join(ws, Dir)))
		}},
		{"symlinked area", func(t *testing.T, ws, canary string) {
			must(t, os.Mkdir(filepath.Join(ws, Dir), 0o700))
			must(t, os.WriteFile(filepath.Join(ws, Dir, "id"), []byte("tok\n"), 0o600))
			must(t, os.Symlink(canary, filepath.Join(ws, Dir, "aside")))
		}},
		{"symlinked README", func(t *testing.T, ws, canary string) {
			must(t, os.Mkdir(filepath.Join(ws, Dir), 0o700))
			must(t, os.Symlink(filepath.Join(canary, "victim"), filepath.Join(ws, Dir, "README")))
		}},
		{"other token", func(t *testing.T, ws, canary string) {
			must(t, os.MkdirAll(filepath.Join(ws, Dir, "aside"), 0o700))
			must(t, os.WriteFile(filepath.Join(ws, Dir, "id"), []byte("other\n"), 0o600))
			must(t, os.WriteFile(filepath.Join(ws, Dir, "aside", "x"), []byte("keep me"), 0o600))
		}},
		{"open mode", func(t *testing.T, ws, canary string) {
			must(t, os.Mkdir(filepath.Join(ws, Dir), 0o755))
			must(t, os.Chmod(filepath.Join(ws, Dir), 0o755))
		}},
		{"other owner", func(t *testing.T, ws, canary string) {
			must(t, os.Mkdir(filepath.Join(ws, Dir), 0o700))
			must(t, os.Lchown(filepath.Join(ws, Dir), 4242, 4242))
		}},
		{"a file", func(t *testing.T, ws, canary string) {
			must(t, os.WriteFile(filepath.Join(ws, Dir), []byte("x"), 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "other owner" {
				testenv.NeedRoot(t)
			}
			ws, canary := t.TempDir(), t.TempDir()
			must(t, os.WriteFile(filepath.Join(canary, "victim"), []byte("precious"), 0o644))
			tc.plant(t, ws, canary)
			before := listing(t, ws, canary)
			_, err := Open(openRoot(t, ws), "tok")
			if !errors.Is(err, ErrForeign) {
				t.Fatalf("Open = %v, want ErrForeign", err)
			}
			if after := listing(t, ws, canary); after != before {
				t.Errorf("refused, but something changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// An empty private directory of the daemon's own — a crash between
// making it and writing its id — is adopted.
func TestEmptyPrivateDirAdopted(t *testing.T) {
	ws := t.TempDir()
	must(t, os.Mkdir(filepath.Join(ws, Dir), 0o700))
	open(t, openRoot(t, ws), "tok")
	b, err := os.ReadFile(filepath.Join(ws, Dir, "id"))
	if err != nil || string(b) != "tok\n" {
		t.Fatalf("id = %q, %v", b, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// listing describes every entry beneath the given directories: names,
// modes, owners and file contents.
func listing(t *testing.T, dirs ...string) string {
	t.Helper()
	var out string
	for _, d := range dirs {
		filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return nil
			}
			out += p + " " + fi.Mode().String()
			if fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				out += " " + string(b)
			}
			out += "\n"
			return nil
		})
	}
	return out
}

// TestKeptForUse: an entry Drop defers while the kernel uses it counts
// for its inode until it is freed; one freed at once, or never
// deferred, does not.
func TestKeptForUse(t *testing.T) {
	dir := t.TempDir()
	root := openRoot(t, dir)
	a := open(t, root, "tok")
	used := map[string]bool{}
	a.SetInUse(func(name string) bool { return used[name] })
	ino := func(name string) uint64 {
		var st unix.Stat_t
		if err := unix.Fstatat(a.dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	busy, idle, journaled := moveIn(t, a, root, dir, "busy"), moveIn(t, a, root, dir, "idle"), moveIn(t, a, root, dir, "journaled")
	busyIno, journaledIno := ino(busy), ino(journaled)
	used[busy] = true
	for _, n := range []string{busy, idle} {
		if err := a.Drop(n); err != nil {
			t.Fatal(err)
		}
	}
	a.Drop(busy) // twice: counted once
	if got := a.KeptForUse(busyIno); got != 1 {
		t.Errorf("deferred entry: KeptForUse = %d, want 1", got)
	}
	if got := a.KeptForUse(journaledIno); got != 0 {
		t.Errorf("entry never dropped: KeptForUse = %d, want 0", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, a.Path(idle))); !os.IsNotExist(err) {
		t.Errorf("entry not in use still there: %v", err)
	}
	used[busy] = false
	if err := a.FreeDeferred(busy); err != nil {
		t.Fatal(err)
	}
	if got := a.KeptForUse(busyIno); got != 0 {
		t.Errorf("freed entry: KeptForUse = %d, want 0", got)
	}
}
