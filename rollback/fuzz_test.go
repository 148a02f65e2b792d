package rollback

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// FuzzRollbackStaysInside feeds the planner and the executor records
// with hostile paths — absolute, climbing with "..", through symlinks
// that lead out of the workspace, into the private area, with NUL
// bytes — and checks that a forced rollback of them never changes
// anything outside the workspace.
func FuzzRollbackStaysInside(f *testing.F) {
	f.Add(byte(0), "out/victim", "", "", []byte("x"))
	f.Add(byte(1), "d/up/victim", "", "../../victim", []byte(""))
	f.Add(byte(2), "a", "out/new", "", []byte(""))
	f.Add(byte(2), "out/victim", "a", "", []byte(""))
	f.Add(byte(3), "/etc/passwd", "", "", []byte("root"))
	f.Add(byte(4), "../canary/victim", "", "", []byte("evil"))
	f.Add(byte(5), "d/up/sub", "", "", []byte(""))
	f.Add(byte(1), ".cowfs/aside/../../../canary", "", ".cowfs", []byte(""))
	f.Add(byte(4), "out\x00/victim", "", "", []byte("evil"))
	f.Fuzz(func(t *testing.T, kind byte, p1, p2, asideName string, data []byte) {
		fx := newFixture(t)
		j := fx.env.Journal
		turn, err := j.BeginTurn("", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		rec := &journal.Record{Path: p1, Path2: p2, Aside: asideName, Ino: uint64(len(data)) + 1,
			Type: unix.S_IFREG, Attr: journal.Attr{Mode: unix.S_IFREG | 0o644, Mtime: 1}}
		switch kind % 6 {
		case 0:
			rec.Kind = journal.KindCreate
		case 1:
			rec.Kind = journal.KindRemove
		case 2:
			rec.Kind = journal.KindRename
		case 3:
			rec.Kind = journal.KindAttr
		case 4:
			rec.Kind, rec.Off, rec.Len = journal.KindData, 0, int64(len(data))
		case 5:
			rec.Kind, rec.XattrName, rec.XattrValue, rec.XattrExisted = journal.KindXattr, "user.x", data, true
		}
		g := j.Enter()
		j.Append(g, rec, bytes.NewReader(data))
		g.Leave()
		if _, err := j.EndTurn(time.Now()); err != nil {
			t.Fatal(err)
		}
		Rollback(fx.env, turn, true, false) // may fail or skip; must stay inside
		fx.checkCanary(t)
	})
}

// fixture is a workspace with symlinks out of it to a canary directory,
// its aside area, and a journal.
type fixture struct {
	env    *Env
	canary string
	before string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	top := t.TempDir()
	ws, canary := filepath.Join(top, "ws"), filepath.Join(top, "canary")
	for _, d := range []string{filepath.Join(ws, "d"), filepath.Join(canary, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(canary, "victim"), []byte("precious"), 0o644)
	os.WriteFile(filepath.Join(ws, "a"), []byte("a"), 0o644)
	os.Symlink(canary, filepath.Join(ws, "out"))
	os.Symlink("../../canary", filepath.Join(ws, "d", "up"))
	root, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(root) })
	area, err := aside.Open(root, "fuzz")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { area.Close() })
	var st unix.Stat_t
	unix.Fstat(root, &st)
	fx := &fixture{
		env: &Env{Journal: journal.TestJournal(t, journal.Options{}), Tree: backing.NewTree(root),
			Aside: area, RootDev: st.Dev},
		canary: canary,
	}
	fx.before = describe(canary)
	return fx
}

func (fx *fixture) checkCanary(t *testing.T) {
	t.Helper()
	if after := describe(fx.canary); after != fx.before {
		t.Fatalf("the rollback changed the canary outside the workspace:\nbefore %s\nafter  %s", fx.before, after)
	}
}

// describe lists every entry beneath dir with its mode, owner, times,
// xattrs and content.
func describe(dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		fmt.Fprintf(&b, "%s %s %s %d:%d", p, fi.Mode(), fi.ModTime(), st.Uid, st.Gid)
		buf := make([]byte, 256)
		if n, err := unix.Lgetxattr(p, "user.x", buf); err == nil {
			fmt.Fprintf(&b, " x=%q", buf[:n])
		}
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.WriteString(" " + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}
