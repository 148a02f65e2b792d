package privdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// nobody is a uid that is neither root nor the test's.
const nobody = 65534

// TestCreate: missing directories are made 0700 by descriptor; an
// existing private one is opened as it is; beneath a sticky
// world-writable directory (t.TempDir is under /tmp) is fine.
func TestCreate(t *testing.T) {
	top := t.TempDir()
	p := filepath.Join(top, "a", "b")
	d, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, q := range []string{filepath.Join(top, "a"), p} {
		fi, err := os.Lstat(q)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a 0700 directory", q, fi.Mode(), err)
		}
	}
	if d, err = Open(p); err != nil {
		t.Fatalf("Open of what Create made: %v", err)
	}
	if d.Path() != p {
		t.Errorf("Path() = %q, want %q", d.Path(), p)
	}
	d.Close()
	if _, err := Open(filepath.Join(top, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing directory: %v, want ErrNotExist", err)
	}
}

// TestRefused: a directory another user could change, or reached
// through one, is refused with a clear error, and nothing is created
// where a symlink points.
func TestRefused(t *testing.T) {
	testenv.NeedRoot(t) // to chown to another user
	for _, tc := range []struct {
		name   string
		setup  func(top, outside string) string // returns the path to ask for
		reason string
	}{
		{"the directory is a symlink", func(top, outside string) string {
			os.Symlink(outside, filepath.Join(top, "link"))
			return filepath.Join(top, "link")
		}, "is a symlink"},
		{"a component is a symlink", func(top, outside string) string {
			os.Symlink(outside, filepath.Join(top, "link"))
			return filepath.Join(top, "link", "state", "sockets")
		}, "is a symlink"},
		{"the directory is another user's", func(top, _ string) string {
			p := filepath.Join(top, "theirs")
			os.Mkdir(p, 0o700)
			os.Chown(p, nobody, nobody)
			return p
		}, "is owned by uid 65534"},
		{"a component is another user's", func(top, _ string) string {
			p := filepath.Join(top, "theirs")
			os.Mkdir(p, 0o755)
			os.Chown(p, nobody, nobody)
			return filepath.Join(p, "mine")
		}, "is owned by uid 65534"},
		{"the directory is group-writable", func(top, _ string) string {
			p := filepath.Join(top, "shared")
			os.Mkdir(p, 0o700)
			os.Chmod(p, 0o770)
			return p
		}, "writable by its group or by others"},
		{"the directory is world-writable and sticky", func(top, _ string) string {
			p := filepath.Join(top, "tmp")
			os.Mkdir(p, 0o700)
			os.Chmod(p, os.ModeSticky|0o777)
			return p
		}, "writable by its group or by others"},
		{"a component is world-writable", func(top, _ string) string {
			p := filepath.Join(top, "open")
			os.Mkdir(p, 0o700)
			os.Chmod(p, 0o777)
			return filepath.Join(p, "mine")
		}, "writable by its group or by others"},
		{"a component is not a directory", func(top, _ string) string {
			os.WriteFile(filepath.Join(top, "file"), nil, 0o600)
			return filepath.Join(top, "file", "mine")
		}, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, outside := t.TempDir(), t.TempDir()
			p := tc.setup(top, outside)
			for _, fn := range []func(string) (*Dir, error){Create, Open} {
				d, err := fn(p)
				if err == nil {
					d.Close()
					t.Fatalf("%s was accepted", p)
				}
				var ue *UnsafeError
				if !errors.Is(err, ErrUnsafe) || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.reason) {
					t.Fatalf("%s: %v, want a refusal saying %q", p, err, tc.reason)
				}
				if !strings.HasPrefix(err.Error(), "refused: "+ue.Component+" ") || !strings.HasPrefix(p, ue.Component) {
					t.Errorf("the error does not start by naming the component: %v", err)
				}
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("something was created where the symlink points: %v", ents)
			}
		})
	}
}

// TestStickyAncestor: a component another user created first in a
// sticky directory is theirs, and refused; one of ours or root's is
// fine, because nobody else may rename or remove it there.
func TestStickyAncestor(t *testing.T) {
	testenv.NeedRoot(t)
	top := t.TempDir()
	sticky := filepath.Join(top, "tmp")
	os.Mkdir(sticky, 0o700)
	os.Chmod(sticky, os.ModeSticky|0o777)
	if err := Make(filepath.Join(sticky, "mine", "state")); err != nil {
		t.Errorf("beneath a sticky directory: %v", err)
	}
	squat := filepath.Join(sticky, "squatted")
	os.Mkdir(squat, 0o755)
	os.Chown(squat, nobody, nobody)
	if err := Make(filepath.Join(squat, "state")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("beneath another user's directory in a sticky one: %v, want ErrUnsafe", err)
	}
	if _, err := os.Lstat(filepath.Join(squat, "state")); err == nil {
		t.Error("a directory was created in another user's directory")
	}
}

// TestChmodSocket acts on the socket the name holds, and on nothing a
// name that is no socket holds.
func TestChmodSocket(t *testing.T) {
	top := t.TempDir()
	d, err := Open(top)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, nil, 0o644)
	os.Symlink(target, filepath.Join(top, "link"))
	if err := d.ChmodSocket("link", 0o600); err == nil {
		t.Error("ChmodSocket followed a symlink")
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("the symlink's target changed mode: %v", fi.Mode())
	}
}
