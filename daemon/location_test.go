package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocate: a workspace's state directory is named after its
// canonical path (absolute, symlinks resolved), so every way of naming
// the workspace finds the same daemon; the name is safe and short.
func TestLocate(t *testing.T) {
	state := t.TempDir()
	t.Setenv("COWFS_STATE_DIR", state)
	top := t.TempDir()
	ws := filepath.Join(top, "my project: v2 (final)")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Symlink(ws, filepath.Join(top, "link")))

	l, err := Locate(ws)
	if err != nil {
		t.Fatal(err)
	}
	if l.Workspace != ws {
		t.Errorf("Workspace = %q, want %q", l.Workspace, ws)
	}
	if filepath.Dir(l.Dir) != state {
		t.Errorf("Dir %q is not in the state root %q", l.Dir, state)
	}
	base := filepath.Base(l.Dir)
	if !strings.HasPrefix(base, "my_project_v2_final_-") || len(base) != len("my_project_v2_final_-")+12 {
		t.Errorf("state directory name %q: want the sanitized name, a dash and 12 hex digits", base)
	}
	for what, got := range map[string]string{"socket": l.Socket(), "journal": l.Journal(), "log": l.Log()} {
		if filepath.Dir(got) != l.Dir {
			t.Errorf("%s %q is not in %q", what, got, l.Dir)
		}
	}

	// The same workspace by other names.
	t.Chdir(top)
	for _, other := range []string{filepath.Join(top, "link"), "link", "./my project: v2 (final)/", ws + "/sub/.."} {
		o, err := Locate(other)
		if err != nil {
			t.Fatal(err)
		}
		if o != l {
			t.Errorf("Locate(%q) = %+v, want %+v", other, o, l)
		}
	}

	// Another workspace of the same name elsewhere.
	ws2 := filepath.Join(top, "b", "my project: v2 (final)")
	must(t, os.MkdirAll(ws2, 0o755))
	if o, _ := Locate(ws2); o.Dir == l.Dir {
		t.Errorf("two workspaces share the state directory %s", l.Dir)
	}

	// A long name is cut; a workspace whose last component does not
	// resolve (a stale mount) keeps it.
	long := filepath.Join(top, strings.Repeat("x", 100))
	if o, err := Locate(long); err != nil || len(filepath.Base(o.Dir)) != 32+1+12 {
		t.Errorf("Locate(long) = %+v, %v", o, err)
	}
	if _, err := Locate(filepath.Join(top, "missing", "ws")); err == nil {
		t.Errorf("Locate of a path whose parent is missing succeeded")
	}
}

// TestLocateTooDeep: a state root too deep for a socket path is
// refused with advice, not silently cut.
func TestLocateTooDeep(t *testing.T) {
	t.Setenv("COWFS_STATE_DIR", "/"+strings.Repeat("d", 100))
	_, err := Locate(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "COWFS_STATE_DIR") {
		t.Errorf("Locate with a deep state root: %v", err)
	}
}

func TestStateRoot(t *testing.T) {
	t.Setenv("COWFS_STATE_DIR", "/some/where")
	if got := StateRoot(); got != "/some/where" {
		t.Errorf("StateRoot() = %q with COWFS_STATE_DIR", got)
	}
	t.Setenv("COWFS_STATE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "/xdg")
	t.Setenv("HOME", "/home/u")
	want := "/xdg/cowfs"
	if os.Getuid() == 0 {
		want = "/var/lib/cowfs"
	}
	if got := StateRoot(); got != want {
		t.Errorf("StateRoot() = %q, want %q", got, want)
	}
	if os.Getuid() != 0 {
		t.Setenv("XDG_STATE_HOME", "")
		if got := StateRoot(); got != "/home/u/.local/state/cowfs" {
			t.Errorf("StateRoot() = %q without XDG_STATE_HOME", got)
		}
	}
}

// TestFind: a path inside a workspace finds the workspace whose daemon
// has a socket, the nearest one up; with none, the path's own location.
func TestFind(t *testing.T) {
	t.Setenv("COWFS_STATE_DIR", t.TempDir())
	ws := t.TempDir()
	sub := filepath.Join(ws, "a", "b")
	must(t, os.MkdirAll(sub, 0o755))

	own, _ := Locate(sub)
	if got, err := Find(sub); err != nil || got != own {
		t.Errorf("Find without a daemon = %+v, %v; want %+v", got, err, own)
	}
	l, _ := Locate(ws)
	must(t, os.MkdirAll(l.Dir, 0o700))
	must(t, os.WriteFile(l.Socket(), nil, 0o600)) // stands for the socket
	for _, p := range []string{sub, filepath.Join(ws, "a"), ws, filepath.Join(sub, "not-yet")} {
		if got, err := Find(p); err != nil || got != l {
			t.Errorf("Find(%q) = %+v, %v; want %+v", p, got, err, l)
		}
	}
	// A nearer workspace with a daemon wins.
	inner, _ := Locate(filepath.Join(ws, "a"))
	must(t, os.MkdirAll(inner.Dir, 0o700))
	must(t, os.WriteFile(inner.Socket(), nil, 0o600))
	if got, _ := Find(sub); got != inner {
		t.Errorf("Find(%q) = %+v, want the nearer %+v", sub, got, inner)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestEmptyWorkspacePath: an empty path names no workspace — not the
// current directory — wherever one is named.
func TestEmptyWorkspacePath(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("COWFS_STATE_DIR", t.TempDir())
	if _, err := Locate(""); !errors.Is(err, ErrEmptyPath) {
		t.Errorf("Locate(\"\"): %v", err)
	}
	if _, err := Find(""); !errors.Is(err, ErrEmptyPath) {
		t.Errorf("Find(\"\"): %v", err)
	}
	if err := CheckPlacement(Options{}); !errors.Is(err, ErrEmptyPath) {
		t.Errorf("CheckPlacement with no workspace: %v", err)
	}
	if _, err := Purge("", ""); !errors.Is(err, ErrEmptyPath) {
		t.Errorf("Purge(\"\"): %v", err)
	}
	if _, err := LogPath(""); !errors.Is(err, ErrEmptyPath) {
		t.Errorf("LogPath(\"\"): %v", err)
	}
	if _, err := Unmount("", false); !errors.Is(err, ErrEmptyPath) {
		t.Errorf("Unmount(\"\"): %v", err)
	}
}
