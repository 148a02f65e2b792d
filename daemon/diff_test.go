package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

// testDaemon is a daemon without a mount: the journal, the backing
// directory and the aside area that the control requests read, wired
// as Start wires them. Changes are journaled as the mount journals them
// (fs/create.go, fs/recorder.go) and made on the backing directory.
type testDaemon struct {
	t  *testing.T
	d  *Daemon
	ws string
}

func newTestDaemon(t *testing.T) *testDaemon {
	t.Helper()
	ws := t.TempDir()
	root, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(root) })
	var st unix.Stat_t
	must(t, unix.Fstat(root, &st))
	j := journal.TestJournal(t, journal.Options{Reserve: 1 << 20})
	token, err := j.Binding()
	must(t, err)
	area, err := aside.Open(root, token)
	must(t, err)
	t.Cleanup(func() { area.Close() })
	d := &Daemon{j: j, rootFd: root, rootDev: st.Dev, tree: backing.NewTree(root), area: area,
		loc: Location{Workspace: ws, Dir: t.TempDir()}, log: slog.New(slog.DiscardHandler), stopping: make(chan struct{})}
	return &testDaemon{t: t, d: d, ws: ws}
}

func (td *testDaemon) svc() *service { return &service{d: td.d} }

func (td *testDaemon) append(rec *journal.Record, src *os.File) {
	td.t.Helper()
	g := td.d.j.Enter()
	defer g.Leave()
	var err error
	if src != nil {
		err = td.d.j.Append(g, rec, src)
	} else {
		err = td.d.j.Append(g, rec, nil)
	}
	must(td.t, err)
}

func (td *testDaemon) id(st *unix.Stat_t) uint64 {
	return journal.InodeID(st.Dev, st.Ino, td.d.rootDev)
}

// create journals the creation of rel, then makes it.
func (td *testDaemon) create(rel, content string) {
	td.t.Helper()
	td.append(&journal.Record{Kind: journal.KindCreate, Path: rel, Type: syscall.S_IFREG}, nil)
	must(td.t, os.WriteFile(filepath.Join(td.ws, rel), []byte(content), 0o644))
}

// write journals rel's attributes and whole content, then replaces its
// content: the first change to it in a step (each step is an epoch).
func (td *testDaemon) write(rel, content string) {
	td.t.Helper()
	p := filepath.Join(td.ws, rel)
	var st unix.Stat_t
	must(td.t, unix.Lstat(p, &st))
	td.append(&journal.Record{Kind: journal.KindAttr, Cause: journal.CauseWrite, Path: rel, Type: syscall.S_IFREG,
		Ino: td.id(&st), Attr: journal.AttrOf(&st)}, nil)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	must(td.t, err)
	defer f.Close()
	td.append(&journal.Record{Kind: journal.KindData, Path: rel, Type: syscall.S_IFREG, Ino: td.id(&st), Len: st.Size}, f)
	must(td.t, f.Truncate(0))
	_, err = f.WriteAt([]byte(content), 0)
	must(td.t, err)
}

func (td *testDaemon) begin() {
	td.t.Helper()
	_, err := td.d.j.BeginTurn("", "", time.Now())
	must(td.t, err)
}

func (td *testDaemon) step(id string) {
	td.t.Helper()
	_, err := td.d.j.BeginStep(id, "")
	must(td.t, err)
}

func (td *testDaemon) end() {
	td.t.Helper()
	_, err := td.d.j.EndTurn(time.Now())
	must(td.t, err)
}

// TestDiffRanges: a diff covers exactly its range — a turn, a turn to a
// later one or to now, one step of a turn (from the step's own start to
// its last change, whatever later steps and turns did) — and refuses
// ranges that do not exist.
func TestDiffRanges(t *testing.T) {
	td := newTestDaemon(t)
	must(t, os.WriteFile(filepath.Join(td.ws, "b.txt"), []byte("b0\n"), 0o644))
	td.begin() // turn 1
	td.step("s1")
	td.create("a.txt", "one\n")
	td.write("b.txt", "b1\n")
	td.step("s2")
	td.write("a.txt", "one\ntwo\n")
	td.write("b.txt", "b2\n")
	td.step("s3")
	td.write("a.txt", "one\ntwo\nthree\n")
	td.end()
	td.begin() // turn 2
	td.write("b.txt", "b3\n")
	td.end()

	type file struct{ path, status, diff string }
	cases := []struct {
		name     string
		req      ctl.DiffRequest
		from, to string
		files    []file // the diff's +/- lines, without headers
	}{
		{"turn", ctl.DiffRequest{From: "1"}, "turn 1", "end of turn 1", []file{
			{"a.txt", changeCreated, "+one +two +three"},
			{"b.txt", changeModified, "-b0 +b2"},
		}},
		{"step 1", ctl.DiffRequest{From: "1", Step: "s1"}, "turn 1 step s1", "end of the step", []file{
			{"a.txt", changeCreated, "+one"},
			{"b.txt", changeModified, "-b0 +b1"},
		}},
		{"step 2", ctl.DiffRequest{From: "1", Step: "s2"}, "turn 1 step s2", "end of the step", []file{
			{"a.txt", changeModified, "+two"},
			{"b.txt", changeModified, "-b1 +b2"},
		}},
		{"step 3", ctl.DiffRequest{From: "1", Step: "s3"}, "turn 1 step s3", "end of the step", []file{
			{"a.txt", changeModified, "+three"},
		}},
		{"to a later turn", ctl.DiffRequest{From: "1", To: "2"}, "turn 1", "turn 2", []file{
			{"a.txt", changeCreated, "+one +two +three"},
			{"b.txt", changeModified, "-b0 +b2"},
		}},
		{"to now", ctl.DiffRequest{From: "1", To: "now"}, "turn 1", "now", []file{
			{"a.txt", changeCreated, "+one +two +three"},
			{"b.txt", changeModified, "-b0 +b3"},
		}},
		{"second turn", ctl.DiffRequest{From: "2"}, "turn 2", "end of turn 2", []file{
			{"b.txt", changeModified, "-b2 +b3"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := td.svc().Diff(context.Background(), c.req)
			if err != nil {
				t.Fatal(err)
			}
			if d.From != c.from || d.To != c.to {
				t.Errorf("range %q to %q, want %q to %q", d.From, d.To, c.from, c.to)
			}
			if len(d.Files) != len(c.files) {
				t.Fatalf("files %+v, want %+v", d.Files, c.files)
			}
			for i, f := range d.Files {
				want := c.files[i]
				if string(f.Path) != want.path || f.Status != want.status || changedLines(f.Diff) != want.diff {
					t.Errorf("file %d: %s %s %q, want %s %s %q\n%s", i, f.Path, f.Status, changedLines(f.Diff),
						want.path, want.status, want.diff, f.Diff)
				}
				if n := strings.Count(want.diff, "+"); f.Added != n {
					t.Errorf("%s: %d lines added, want %d", f.Path, f.Added, n)
				}
			}
		})
	}

	for _, c := range []struct {
		req  ctl.DiffRequest
		code string
	}{
		{ctl.DiffRequest{From: "1", Step: "nope"}, ctl.CodeNotFound},
		{ctl.DiffRequest{From: "2", Step: "s1"}, ctl.CodeNotFound}, // s1 is turn 1's
		{ctl.DiffRequest{From: "2", To: "1"}, ctl.CodeBadRequest},
		{ctl.DiffRequest{From: "9"}, ctl.CodeNotFound},
		{ctl.DiffRequest{From: "1", To: "9"}, ctl.CodeNotFound},
	} {
		_, err := td.svc().Diff(context.Background(), c.req)
		var ce *ctl.Error
		if !errors.As(err, &ce) || ce.Code != c.code {
			t.Errorf("Diff(%+v) = %v, want code %s", c.req, err, c.code)
		}
	}
}

// changedLines is a unified diff's added and removed lines, space
// separated, without the file headers.
func changedLines(diff string) string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}
