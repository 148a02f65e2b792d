package fs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forceStat makes the kernel ask the daemon for path's attributes.
func forceStat(t *testing.T, path string) {
	t.Helper()
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &st); err != nil {
		t.Fatal(err)
	}
}

// A file's cached pages outlive the daemon's own write to it: reading
// it back after a write and a fresh stat (which shows the new mtime)
// sends no READ. Under auto_inval_data the stat dropped every page.
func TestOwnWriteKeepsPages(t *testing.T) {
	mnt, _, j, _, m := testMountAll(t)
	j.BeginTurn("", "", time.Now())
	p := filepath.Join(mnt, "db")
	want := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("first read: %v", err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := bytes.Repeat([]byte("w"), 4096)
	time.Sleep(10 * time.Millisecond) // a later mtime
	before := m.Requests()
	if _, err := f.WriteAt(page, 8192); err != nil {
		t.Fatal(err)
	}
	forceStat(t, p)
	copy(want[8192:], page)
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v, equal %v", err, bytes.Equal(got, want))
	}
	after := m.Requests()
	if n := after["READ"] - before["READ"]; n != 0 {
		t.Errorf("reading back a cached file after writing a page of it: %d READs", n)
	}
	if n := after["GETATTR"] + after["STATX"] - before["GETATTR"] - before["STATX"]; n == 0 {
		t.Errorf("the forced stat reached no daemon")
	}
}

// A file changed behind the mount's back, same size, is read afresh
// once the daemon answers a stat of it: it sees the mtime move with no
// change of its own and invalidates the cached pages.
func TestOutsideChangeSeenOnStat(t *testing.T) {
	mnt, backing, _ := testMount(t)
	p := filepath.Join(mnt, "f")
	if err := os.WriteFile(filepath.Join(backing, "f"), bytes.Repeat([]byte("a"), 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || b[0] != 'a' {
		t.Fatalf("first read: %q, %v", b[:1], err)
	}
	time.Sleep(10 * time.Millisecond)
	changed := bytes.Repeat([]byte("b"), 8192)
	if err := os.WriteFile(filepath.Join(backing, "f"), changed, 0o644); err != nil {
		t.Fatal(err)
	}
	forceStat(t, p)
	deadline := time.Now().Add(5 * time.Second) // the invalidation is sent off the reader
	for {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(b, changed) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("read through the mount after a stat: %q…, want the change made behind it", b[:8])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
