package rescan

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// watchEnv is a backing directory, a journal and a watching scanner.
// The test process stands for both the mount (whose changes it
// journals first, and whose events the scanner drops as its own, see
// asMount) and the writers behind it.
type watchEnv struct {
	t     *testing.T
	watch bool
	ws    string
	j     *journal.Journal
	s     *Scanner
	log   *bytes.Buffer
}

// bothWays runs test once with a watching scanner and once with one
// that stats every tracked path: the findings must be the same.
func bothWays(t *testing.T, test func(e *watchEnv)) {
	for _, watch := range []bool{true, false} {
		name := "watched"
		if !watch {
			name = "stat"
		}
		t.Run(name, func(t *testing.T) { test(newWatchEnv(t, watch)) })
	}
}

func newWatchEnv(t *testing.T, watch bool) *watchEnv {
	t.Helper()
	ws := t.TempDir()
	root, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(root) })
	var st unix.Stat_t
	if err := unix.Fstat(root, &st); err != nil {
		t.Fatal(err)
	}
	j := journal.TestJournal(t, journal.Options{Reserve: 1 << 20})
	buf := &bytes.Buffer{}
	s, err := New(j, backing.NewTree(root), st.Dev, slog.New(slog.NewTextHandler(buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !watch {
		return &watchEnv{t: t, ws: ws, j: j, s: s, log: buf}
	}
	if err := s.watchAs(-1); err != nil {
		if os.Getenv("COWFS_TEST_DISALLOW_SKIP") != "" {
			t.Fatal(err)
		}
		t.Skip("no fanotify:", err)
	}
	t.Cleanup(s.Close)
	return &watchEnv{t: t, watch: true, ws: ws, j: j, s: s, log: buf}
}

// halt stops reading events: the kernel's queue fills.
func (e *watchEnv) halt() {
	if e.watch {
		e.s.w.halt()
	}
}

func (e *watchEnv) path(rel string) string { return filepath.Join(e.ws, rel) }

// journal appends rec as the mount would, before its change.
func (e *watchEnv) journal(rec *journal.Record) {
	e.t.Helper()
	g := e.j.Enter()
	defer g.Leave()
	if err := e.j.Append(g, rec, nil); err != nil {
		e.t.Fatal(err)
	}
}

// asMount runs fn as the mount: the events of what it does are the
// daemon's own, dropped as they are read.
func (e *watchEnv) asMount(fn func()) {
	e.t.Helper()
	if !e.watch {
		fn()
		return
	}
	w := e.s.w
	w.mu.Lock()
	w.drain() // what came before is another process's
	w.self = os.Getpid()
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.drain() // events are queued as the system calls make them
		w.self = -1
		w.mu.Unlock()
	}()
	fn()
}

// mkdir, create and write are changes through the mount.
func (e *watchEnv) mkdir(rel string) {
	e.t.Helper()
	e.journal(&journal.Record{Kind: journal.KindCreate, Path: rel, Type: syscall.S_IFDIR})
	e.asMount(func() { must(e.t, os.Mkdir(e.path(rel), 0o755)) })
}

func (e *watchEnv) create(rel, content string) {
	e.t.Helper()
	e.journal(&journal.Record{Kind: journal.KindCreate, Path: rel, Type: syscall.S_IFREG})
	e.asMount(func() { must(e.t, os.WriteFile(e.path(rel), []byte(content), 0o644)) })
}

func (e *watchEnv) write(rel, content string) {
	e.t.Helper()
	e.journal(&journal.Record{Kind: journal.KindData, Path: rel})
	e.asMount(func() { must(e.t, os.WriteFile(e.path(rel), []byte(content), 0o644)) })
}

// scan runs a boundary's scan and returns what it found, as
// "cause path" lines in path order, and why it was a full one.
func (e *watchEnv) scan() ([]string, string) {
	e.t.Helper()
	g := e.j.Exclusive()
	found, err := e.s.Scan(g, nil)
	g.Leave()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, f := range found {
		out = append(out, fmt.Sprintf("%s %s", causeName[f.Cause], f.Path))
	}
	sort.Strings(out)
	return out, e.s.FullScan()
}

// expect scans and checks what the scan found and whether it was a
// full one.
func (e *watchEnv) expect(full bool, want ...string) string {
	e.t.Helper()
	got, why := e.scan()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		if len(got)+len(want) > 20 {
			e.t.Errorf("found %d, want %d; found but not wanted %q; wanted but not found %q", len(got), len(want), missing(want, got), missing(got, want))
		} else {
			e.t.Errorf("found %q, want %q", got, want)
		}
	}
	if e.watch && (why != "") != full {
		e.t.Errorf("full scan: %q, want full %v", why, full)
	}
	return why
}

// missing is what of b a lacks.
func missing(a, b []string) []string {
	in := map[string]bool{}
	for _, s := range a {
		in[s] = true
	}
	var out []string
	for _, s := range b {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}

// seed makes src/a, src/deep/b and src/deep/c through the mount and
// scans twice: the first scan, at start-up, is full and marks; the
// second stats only what changed.
func (e *watchEnv) seed() {
	e.t.Helper()
	e.mkdir("src")
	e.mkdir("src/deep")
	e.create("src/a", "a")
	e.create("src/deep/b", "b")
	e.create("src/deep/c", "c")
	e.expect(true)
	e.expect(false)
}

// TestWatchedFindsChangesBehindTheMount: once every directory holding a
// tracked path is watched, a scan finds a write, a removal, a
// replacement and a chmod behind the mount without a full scan, and a
// change through the mount (journaled) is not taken for one.
func TestWatchedFindsChangesBehindTheMount(t *testing.T) {
	bothWays(t, func(e *watchEnv) {
		t := e.t
		e.seed()
		must(t, os.WriteFile(e.path("src/a"), []byte("a, changed behind"), 0o644))
		must(t, os.Remove(e.path("src/deep/b")))
		must(t, os.Rename(e.path("src/deep/c"), e.path("src/deep/c.old")))
		must(t, os.WriteFile(e.path("src/deep/c"), []byte("another c"), 0o644))
		must(t, os.Chmod(e.path("src/deep"), 0o700))
		e.expect(false, "deleted src/deep/b", "modified src/a", "modified src/deep", "replaced src/deep/c")

		// Through the mount: journaled first, so explained.
		e.write("src/a", "a, through the mount")
		e.create("src/new", "n")
		e.expect(false)

		// A directory made through the mount is watched from the scan
		// that first saw it on.
		e.mkdir("src/made")
		e.create("src/made/m", "m")
		e.expect(false)
		must(t, os.WriteFile(e.path("src/made/m"), []byte("m, behind"), 0o644))
		e.expect(false, "modified src/made/m")
	})
}

// TestWatchedRenameBehindTheMount: a watched directory renamed behind
// the mount takes what it holds away from the tracked paths (found
// deleted, with it); its mark goes with it, and what then happens to it
// where it went is no tracked path's business; a directory made again
// at its old place behind the mount is found, with what it holds that
// is tracked.
func TestWatchedRenameBehindTheMount(t *testing.T) {
	bothWays(t, func(e *watchEnv) {
		t := e.t
		e.seed()
		must(t, os.Rename(e.path("src/deep"), e.path("moved")))
		e.expect(false, "deleted src/deep", "deleted src/deep/b", "deleted src/deep/c", "modified ", "modified src")

		// Its events still name it by where it was marked.
		must(t, os.WriteFile(e.path("moved/b"), []byte("b, moved and written"), 0o644))
		e.expect(false)

		must(t, os.Mkdir(e.path("src/deep"), 0o755))
		must(t, os.WriteFile(e.path("src/deep/b"), []byte("b again"), 0o644))
		e.expect(false, "created src/deep", "created src/deep/b", "modified src")

		// A directory above tracked paths, renamed: all of them.
		must(t, os.Rename(e.path("src"), e.path("src.old")))
		e.expect(false, "deleted src", "deleted src/a", "deleted src/deep", "deleted src/deep/b", "modified ")
	})
}

// TestWatchedRenameThroughTheMount: one record renames a watched
// directory with what it holds; the scan takes everything beneath both
// names as explained, and the directory's mark now answers for its new
// name: what later happens behind the mount at either is judged as a
// full scan judges it.
func TestWatchedRenameThroughTheMount(t *testing.T) {
	bothWays(t, func(e *watchEnv) {
		t := e.t
		e.seed()
		e.journal(&journal.Record{Kind: journal.KindRename, Path: "src/deep", Path2: "src/moved", Type: syscall.S_IFDIR})
		e.asMount(func() { must(t, os.Rename(e.path("src/deep"), e.path("src/moved"))) })
		e.expect(false)
		must(t, os.WriteFile(e.path("src/moved/c"), []byte("c, behind"), 0o644))
		must(t, os.Mkdir(e.path("src/deep"), 0o755))
		must(t, os.WriteFile(e.path("src/deep/b"), []byte("b, behind"), 0o644))
		e.expect(false, "created src/deep", "created src/deep/b", "modified src")
	})
}

// TestWatchedQueueOverflow: when the kernel's event queue overflows,
// hints are lost, so the next scan is a full one, says why (logged),
// and finds what changed; the one after stats only what changed again.
func TestWatchedQueueOverflow(t *testing.T) {
	bothWays(t, func(e *watchEnv) {
		t := e.t
		e.seed()
		e.halt()
		must(t, os.WriteFile(e.path("src/a"), []byte("a, behind"), 0o644))
		max := 16384
		if b, err := os.ReadFile("/proc/sys/fs/fanotify/max_queued_events"); err == nil {
			fmt.Sscan(string(b), &max)
		}
		for i := 0; i <= max; i++ {
			must(t, os.WriteFile(e.path(fmt.Sprintf("src/f%d", i)), nil, 0o644))
		}
		why := e.expect(true, "modified src", "modified src/a")
		if !e.watch {
			return
		}
		if !strings.Contains(why, "overflow") {
			t.Errorf("full scan because %q, want the overflow", why)
		}
		if !strings.Contains(e.log.String(), "stat'ing every tracked path") || !strings.Contains(e.log.String(), "overflow") {
			t.Errorf("the log does not say the scan was full because of the overflow:\n%s", e.log.String())
		}
		// The reader is stopped: the next scan drains what came since.
		must(t, os.WriteFile(e.path("src/deep/b"), []byte("b, behind"), 0o644))
		e.expect(false, "modified src/deep/b")
	})
}

// TestWatchedIgnoresTheRestOfTheFilesystem: the marks are on the
// workspace's directories, so what happens beside it on the same
// filesystem is never queued: many changes there leave the queue empty
// and the next scan stats only what changed.
func TestWatchedIgnoresTheRestOfTheFilesystem(t *testing.T) {
	bothWays(t, func(e *watchEnv) {
		t := e.t
		e.seed()
		e.halt()
		beside := t.TempDir() // the same filesystem as the workspace
		for i := 0; i < 20000; i++ {
			must(t, os.WriteFile(filepath.Join(beside, fmt.Sprintf("f%d", i)), nil, 0o644))
		}
		e.expect(false)
		if e.watch && len(e.s.w.dirs) != 3 {
			t.Errorf("%d directories watched, want 3 (the root, src, src/deep)", len(e.s.w.dirs))
		}
	})
}

// TestWatchedHardLinkFallsBack: a file with another name, changed under
// that name, changes the tracked path's fingerprint where no event names
// it: the scan is a full one, and finds it.
func TestWatchedHardLinkFallsBack(t *testing.T) {
	bothWays(t, func(e *watchEnv) {
		t := e.t
		e.seed()
		must(t, os.Link(e.path("src/a"), e.path("link-to-a")))
		e.expect(true, "modified ") // the root's times moved; a new name of src/a alone changes nothing a rollback restores
		must(t, os.WriteFile(e.path("link-to-a"), []byte("a, through another name"), 0o644))
		e.expect(true, "modified src/a")
	})
}

// TestWatchedAsideNames: a file the turn linked and unlinked through
// the mount (git writes its objects so) keeps a name in the aside area;
// the scan counts the area's names and stays one of what changed.
func TestWatchedAsideNames(t *testing.T) {
	bothWays(t, func(e *watchEnv) {
		t := e.t
		must(t, os.MkdirAll(e.path(".cowfs/aside"), 0o700)) // there from the start
		e.seed()
		var st unix.Stat_t
		e.s.CountAside(func(ino uint64) uint32 {
			if ino == st.Ino {
				return 1
			}
			return 0
		})
		e.create("src/obj", "object")
		e.asMount(func() { must(t, os.Link(e.path("src/obj"), e.path(".cowfs/aside/1"))) })
		must(t, unix.Stat(e.path("src/obj"), &st))
		e.expect(false)
	})
}

// TestWatchedAfterRefresh: a rollback's steps may put new directories
// where watched ones were; the refresh after them marks what they
// changed, so the next scan still stats only what changed, and finds a
// change behind the mount inside what the rollback brought back.
func TestWatchedAfterRefresh(t *testing.T) {
	bothWays(t, func(e *watchEnv) {
		t := e.t
		e.seed()
		e.mkdir("src/gone")
		e.create("src/gone/x", "x")
		e.expect(false)
		e.journal(&journal.Record{Kind: journal.KindRemove, Path: "src/gone", Type: syscall.S_IFDIR})
		e.asMount(func() { must(t, os.RemoveAll(e.path("src/gone"))) })
		e.expect(false)

		// The rollback's steps, under the gate, then the refresh.
		g := e.j.Exclusive()
		for _, rec := range []*journal.Record{
			{Kind: journal.KindCreate, Path: "src/gone", Type: syscall.S_IFDIR},
			{Kind: journal.KindCreate, Path: "src/gone/x", Type: syscall.S_IFREG},
		} {
			must(t, e.j.Append(g, rec, nil))
		}
		e.asMount(func() {
			must(t, os.Mkdir(e.path("src/gone"), 0o755))
			must(t, os.WriteFile(e.path("src/gone/x"), []byte("x"), 0o644))
		})
		must(t, e.s.Refresh(g))
		g.Leave()

		must(t, os.WriteFile(e.path("src/gone/x"), []byte("x, behind"), 0o644))
		e.expect(false, "modified src/gone/x")
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatchedManyCandidates: a scan of what changed reads what the last
// scan kept of its candidates a batch at a time (keptBatch); with more
// candidates than a batch, and more tracked paths than a batch beneath a
// directory renamed behind the mount, it finds what a full scan finds.
func TestWatchedManyCandidates(t *testing.T) {
	defer func(b int) { keptBatch = b }(keptBatch)
	keptBatch = 16
	bothWays(t, func(e *watchEnv) {
		t := e.t
		n := keptBatch + keptBatch/2
		many := func(i int) string { return fmt.Sprintf("many/f%05d", i) }
		e.mkdir("many")
		e.mkdir("tree")
		for i := 0; i < n; i++ {
			e.create(many(i), "x")
			e.create(fmt.Sprintf("tree/t%05d", i), "t")
		}
		e.expect(true)
		e.expect(false)

		// Every file of many but two rewritten through the mount, so
		// all are candidates; those two changed behind it, one in the
		// first batch, one in the second.
		changed, removed := 1, keptBatch+7
		for i := 0; i < n; i++ {
			if i != changed && i != removed {
				e.write(many(i), "y")
			}
		}
		must(t, os.WriteFile(e.path(many(changed)), []byte("behind"), 0o644))
		must(t, os.Remove(e.path(many(removed))))
		must(t, os.Rename(e.path("tree"), e.path("tree.old")))
		want := []string{"deleted " + many(removed), "deleted tree", "modified ", "modified " + many(changed)}
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("deleted tree/t%05d", i))
		}
		sort.Strings(want)
		e.expect(false, want...)
		e.expect(false)
	})
}
