package fs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/test/testenv"
)

// testChange opens a change on a recorder of its own over a fresh
// journal with a turn open.
func testChange(t testing.TB) (*recorder, *journal.Journal) {
	t.Helper()
	j := journal.TestJournal(t, journal.Options{})
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	return newRecorder(j, nil, slog.New(slog.DiscardHandler)), j
}

// bytesAt is a pre-image source of n bytes.
func bytesAt(n int) capture.Source {
	return func() (io.ReaderAt, func(), error) {
		return strings.NewReader(strings.Repeat("x", n)), noop, nil
	}
}

// journalAll is what change c journals before a write to [lo, hi) of
// inode 7 (size 100, path "f"): its first touch and the bytes.
func journalAll(t testing.TB, c *change, lo, hi int64) {
	t.Helper()
	s := c.state(7)
	defer s.Unlock()
	if err := c.op.Attr(s, 7, "f", &unix.Stat_t{Mode: syscall.S_IFREG | 0o644, Size: 100}, journal.CauseWrite); err != nil {
		t.Fatal(err)
	}
	if err := c.op.Data(s, 7, "f", bytesAt(100), lo, hi); err != nil {
		t.Fatal(err)
	}
}

// A change whose operation was refused withdraws its records and what
// they marked journaled: the next change of the same bytes and
// attributes journals them again. One that changed something first
// (did) keeps them.
func TestFailedChangeWithdraws(t *testing.T) {
	r, j := testChange(t)
	c := r.begin(context.Background(), nil)
	journalAll(t, c, 10, 20)
	c.did(syscall.EPERM)
	if e := c.fail(syscall.EPERM); e != syscall.EPERM {
		t.Errorf("fail returned %v", e)
	}
	c.end()
	if rs := changes(t, j); len(rs) != 0 {
		t.Fatalf("records of a refused change: %+v", rs)
	}
	if s := r.takeStamps(); len(s) != 0 {
		t.Errorf("a refused change stamped %v", s)
	}

	c = r.begin(context.Background(), nil)
	journalAll(t, c, 0, 30)
	c.did(nil)
	c.end()
	rs := changes(t, j)
	if len(rs) != 2 || rs[0].Kind != journal.KindAttr || rs[1].Kind != journal.KindData || rs[1].Off != 0 || rs[1].Len != 30 {
		t.Fatalf("records of the next change: %+v", rs)
	}

	// Partly done: chmod succeeded, chown refused.
	c = r.begin(context.Background(), nil)
	journalAll(t, c, 50, 60)
	c.did(nil)
	c.did(syscall.EPERM)
	c.fail(syscall.EPERM)
	c.end()
	if n := len(changes(t, j)); n != 3 {
		t.Errorf("%d records after a change that failed half way, want 3", n)
	}
	// Failed in a way that may have done part of the work.
	c = r.begin(context.Background(), nil)
	journalAll(t, c, 70, 80)
	c.did(syscall.EIO)
	c.fail(syscall.EIO)
	c.end()
	if n := len(changes(t, j)); n != 4 {
		t.Errorf("%d records after a change that failed with EIO, want 4", n)
	}
}

// A record another change relied on meanwhile (it found the bytes
// journaled and journaled nothing) stays when its own change fails.
func TestFailedChangeKeepsWhatOthersUse(t *testing.T) {
	r, j := testChange(t)
	a := r.begin(context.Background(), nil)
	journalAll(t, a, 0, 10)
	b := r.begin(context.Background(), nil)
	journalAll(t, b, 0, 10) // finds it all journaled
	b.did(nil)
	b.end()
	a.did(syscall.EPERM)
	a.fail(syscall.EPERM)
	a.end()
	if n := len(changes(t, j)); n != 2 {
		t.Fatalf("%d records, want a's 2, which b relied on", n)
	}
}

// chattr sets flag on the backing file p, and takes it off when the
// test ends.
func chattr(t *testing.T, flag, p string) {
	t.Helper()
	testenv.NeedTool(t, "chattr")
	if out, err := exec.Command("chattr", flag, p).CombinedOutput(); err != nil {
		testenv.Skip(t, "the backing filesystem has no "+flag+" flag: "+string(out))
	}
	t.Cleanup(func() { exec.Command("chattr", "-"+flag[1:], p).Run() })
}

// A chmod refused by the backing filesystem leaves no record, and the
// chmod that works once the flag is off is journaled.
func TestRefusedChmodForgotten(t *testing.T) {
	mnt, backing, j := testMount(t)
	os.WriteFile(filepath.Join(backing, "f"), []byte("x"), 0o644)
	p := filepath.Join(mnt, "f")
	os.Stat(p)
	j.BeginTurn("", "", time.Now())
	chattr(t, "+i", filepath.Join(backing, "f"))
	if err := os.Chmod(p, 0o600); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("chmod of an immutable file: %v", err)
	}
	if rs := changes(t, j); len(rs) != 0 {
		t.Fatalf("records of a refused chmod: %+v", rs)
	}
	exec.Command("chattr", "-i", filepath.Join(backing, "f")).Run()
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	rs := changes(t, j)
	if len(rs) != 1 || rs[0].Kind != journal.KindAttr || rs[0].Attr.Mode&0o7777 != 0o644 {
		t.Fatalf("records of the chmod: %+v", rs)
	}
}

// A rename that fails stamps nothing: the stamps tell package rescan
// which inode changes were the mount's, and one taken for a change that
// did not happen hides an earlier change made outside the mount.
func TestFailedRenameStampsNothing(t *testing.T) {
	mnt, backing, j, _, m := testMountAll(t)
	for _, d := range []string{"a", "b", "b/x", "c"} {
		os.Mkdir(filepath.Join(backing, d), 0o755)
	}
	j.BeginTurn("", "", time.Now())
	m.TakeStamps()
	if err := unix.Rename(filepath.Join(mnt, "a"), filepath.Join(mnt, "b")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rename onto a full directory: %v", err)
	}
	testHookRename = func(string) error { return syscall.EACCES }
	t.Cleanup(func() { testHookRename = func(string) error { return nil } })
	if err := unix.Rename(filepath.Join(mnt, "a"), filepath.Join(mnt, "c")); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("rename failing in renameat2: %v", err)
	}
	if s := m.TakeStamps(); len(s) != 0 {
		t.Errorf("failed renames stamped %v", s)
	}
	if rs := changes(t, j); len(rs) != 0 {
		t.Errorf("failed renames left records: %+v", rs)
	}
	for _, d := range []string{"a", "c"} {
		if _, err := os.Stat(filepath.Join(backing, d)); err != nil {
			t.Errorf("%s after the failed rename: %v", d, err)
		}
	}
}

// A rename whose target directory was moved aside and cannot be put
// back when the rename fails (something took its name meanwhile) leaves
// it aside, journaled as removed: a rollback can recover it and the
// sweep at the next start keeps it.
func TestFailedRenameTargetStaysAside(t *testing.T) {
	mnt, backing, j, a, m := testMountAll(t)
	os.Mkdir(filepath.Join(backing, "a"), 0o755)
	os.Mkdir(filepath.Join(backing, "c"), 0o755)
	var st unix.Stat_t
	unix.Lstat(filepath.Join(backing, "c"), &st)
	j.BeginTurn("", "", time.Now())
	m.TakeStamps()
	testHookRename = func(name string) error {
		// Outside the mount, a new c takes the name.
		os.Mkdir(filepath.Join(backing, name), 0o700)
		return syscall.EACCES
	}
	t.Cleanup(func() { testHookRename = func(string) error { return nil } })
	if err := unix.Rename(filepath.Join(mnt, "a"), filepath.Join(mnt, "c")); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("rename: %v", err)
	}
	var removed *journal.Record
	for _, r := range changes(t, j) {
		switch r.Kind {
		case journal.KindRename:
			t.Errorf("the failed rename is journaled: %+v", r)
		case journal.KindRemove:
			removed = r
		}
	}
	if removed == nil || removed.Path != "c" || removed.Aside == "" || removed.Ino != journal.InodeID(st.Dev, st.Ino, st.Dev) {
		t.Fatalf("no removal of c journaled: %+v", changes(t, j))
	}
	kept, err := a.Stat(removed.Aside)
	if err != nil || kept.Ino != st.Ino {
		t.Fatalf("c's directory aside: %v %v", kept, err)
	}
	if s := m.TakeStamps(); s[removed.Ino] == 0 {
		t.Errorf("the directory moved aside is not stamped: %v", s)
	}
}

// changes are the records of j other than events.
func changes(t *testing.T, j *journal.Journal) []*journal.Record {
	var rs []*journal.Record
	for _, r := range records(t, j) {
		if r.Kind != journal.KindEvent {
			rs = append(rs, r)
		}
	}
	return rs
}
