package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckPlacement: a workspace or mountpoint that is a system
// directory, and a journal or state directory the workspace could reach
// (inside it, or holding it, also through a symlink), are refused
// before anything is written; a sound placement passes.
func TestCheckPlacement(t *testing.T) {
	top := t.TempDir()
	state := filepath.Join(top, "state")
	ws := filepath.Join(top, "ws")
	mnt := filepath.Join(top, "mnt")
	other := filepath.Join(top, "other")
	for _, d := range []string{state, ws, mnt, other, filepath.Join(state, "inside")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.Symlink(ws, filepath.Join(top, "sneaky")))

	cases := []struct {
		name  string
		opts  Options
		state string // COWFS_STATE_DIR; default state
		want  string // "" : accepted; else in the refusal
	}{
		{name: "sound", opts: Options{Workspace: ws}},
		{name: "sound with mountpoint and journal", opts: Options{Workspace: ws, Mountpoint: mnt, JournalDir: filepath.Join(other, "j")}},
		{name: "root", opts: Options{Workspace: "/"}, want: "system directory"},
		{name: "tmp", opts: Options{Workspace: "/tmp"}, want: "system directory"},
		{name: "tmp with a trailing slash", opts: Options{Workspace: "/tmp/"}, want: "system directory"},
		{name: "mountpoint usr", opts: Options{Workspace: ws, Mountpoint: "/usr"}, want: "mountpoint /usr is a system directory"},
		{name: "journal in the workspace", opts: Options{Workspace: ws, JournalDir: filepath.Join(ws, ".journal")}, want: "the journal"},
		{name: "journal in the mountpoint", opts: Options{Workspace: ws, Mountpoint: mnt, JournalDir: filepath.Join(mnt, "j")}, want: "the journal"},
		{name: "journal through a symlink into the workspace", opts: Options{Workspace: ws, JournalDir: filepath.Join(top, "sneaky", "j")}, want: "the journal"},
		{name: "journal holds the workspace", opts: Options{Workspace: ws, JournalDir: top}, want: "lies inside the journal"},
		{name: "state root in the workspace", opts: Options{Workspace: ws}, state: filepath.Join(ws, "state"), want: "state"},
		{name: "workspace in the state root", opts: Options{Workspace: filepath.Join(state, "inside")}, want: "inside"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := c.state
			if st == "" {
				st = state
			}
			t.Setenv("COWFS_STATE_DIR", st)
			err := CheckPlacement(c.opts)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want == "":
			case !errors.Is(err, ErrPlacement):
				t.Errorf("got %v, want a refusal (ErrPlacement)", err)
			case !strings.Contains(err.Error(), c.want):
				t.Errorf("refusal %q does not mention %q", err, c.want)
			}
		})
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("CheckPlacement created something")
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		dir, p string
		want   bool
	}{
		{"/a", "/a", true}, {"/a", "/a/b", true}, {"/a", "/ab", false}, {"/a/b", "/a", false}, {"/", "/x", true},
	} {
		if got := within(c.dir, c.p); got != c.want {
			t.Errorf("within(%q, %q) = %v", c.dir, c.p, got)
		}
	}
}
