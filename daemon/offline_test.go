package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// TestSocketDir: with COWFS_SOCKET_DIR the socket leaves the state
// directory for that one, named after it; the state stays.
func TestSocketDir(t *testing.T) {
	t.Setenv("COWFS_STATE_DIR", t.TempDir())
	sockets := t.TempDir()
	l, err := Locate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(SocketDirEnv, sockets)
	if want := filepath.Join(sockets, filepath.Base(l.Dir)+".sock"); l.Socket() != want {
		t.Errorf("Socket() = %q, want %q", l.Socket(), want)
	}
	if filepath.Dir(l.Journal()) != l.Dir {
		t.Errorf("the journal %q left the state directory", l.Journal())
	}
}

// TestFindJournal: a command without a daemon finds the journal of the
// workspace at the path or the nearest parent, where the state
// directory records it (also when --journal moved it), and says there
// is none rather than make one.
func TestFindJournal(t *testing.T) {
	t.Setenv("COWFS_STATE_DIR", t.TempDir())
	ws := t.TempDir()
	sub := filepath.Join(ws, "a", "b")
	must(t, os.MkdirAll(sub, 0o755))

	if _, _, err := findJournal(sub); !errors.Is(err, ctl.ErrNotRunning) {
		t.Errorf("findJournal with no journal: %v, want ErrNotRunning", err)
	}
	l, _ := Locate(ws)
	must(t, os.MkdirAll(l.Journal(), 0o700))
	for _, p := range []string{ws, sub} {
		if got, jdir, err := findJournal(p); err != nil || got != l || jdir != l.Journal() {
			t.Errorf("findJournal(%q) = %+v, %q, %v; want %+v and the default journal", p, got, jdir, err, l)
		}
	}
	moved := filepath.Join(t.TempDir(), "journal")
	must(t, os.Mkdir(moved, 0o700))
	must(t, recordJournal(l, moved))
	if _, jdir, err := findJournal(sub); err != nil || jdir != moved {
		t.Errorf("findJournal after --journal moved it = %q, %v; want %q", jdir, err, moved)
	}
}
