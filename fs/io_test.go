package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
)

// Locks are the kernel's: locks on different open file descriptions
// conflict, as on any local filesystem.
func TestLocks(t *testing.T) {
	mnt, _, _ := testMount(t)
	p := filepath.Join(mnt, "lock")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f1, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	f2, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()

	wr := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f1.Fd(), unix.F_OFD_SETLK, &wr); err != nil {
		t.Fatalf("OFD write lock: %v", err)
	}
	rd := unix.Flock_t{Type: unix.F_RDLCK}
	if err := unix.FcntlFlock(f2.Fd(), unix.F_OFD_SETLK, &rd); !errors.Is(err, unix.EAGAIN) {
		t.Errorf("conflicting OFD read lock: %v, want EAGAIN", err)
	}
	if err := unix.Flock(int(f1.Fd()), unix.LOCK_EX); err != nil {
		t.Fatalf("flock: %v", err)
	}
	if err := unix.Flock(int(f2.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Errorf("conflicting flock: %v, want EWOULDBLOCK", err)
	}
}

// A file open when its last name goes stays readable and writable
// through its descriptor — also once the journal lets go of it (its
// aside entry is then freed when the kernel forgets the file), and also
// when it was created in the same turn (undo does not need it).
func TestOpenFileOutlivesItsNames(t *testing.T) {
	mnt, backing, j, a := testMountArea(t)
	old := filepath.Join(mnt, "old")
	if err := os.WriteFile(old, []byte("old content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(mnt, "new")
	if err := os.WriteFile(fresh, []byte("new content"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(p string) *os.File {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fo, fn := open(old), open(fresh)
	if err := os.Remove(old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "other"), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(mnt, "other"), fresh); err != nil { // replaces "new"
		t.Fatal(err)
	}
	// The journal forgets the removal, as when its turn leaves the window.
	for _, r := range records(t, j) {
		if r.Kind == journal.KindRemove && r.Aside != "" {
			if err := a.Drop(r.Aside); err != nil {
				t.Fatal(err)
			}
		}
	}
	areaDir := filepath.Join(backing, aside.Dir, "aside")
	if n := entries(t, areaDir); n != 2 {
		t.Errorf("aside holds %d entries while both files are open, want 2", n)
	}
	for _, c := range []struct {
		f    *os.File
		want string
	}{{fo, "old content"}, {fn, "new content"}} {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(c.f.Fd()), &st); err != nil || st.Nlink != 0 {
			t.Errorf("%s: fstat nlink %d, %v; want 0", c.f.Name(), st.Nlink, err)
		}
		if _, err := c.f.WriteAt([]byte("C"), 0); err != nil {
			t.Errorf("%s: write: %v", c.f.Name(), err)
		}
		b := make([]byte, 64)
		n, err := c.f.ReadAt(b, 0)
		if got, want := string(b[:n]), "C"+c.want[1:]; got != want {
			t.Errorf("%s: read %q, %v; want %q", c.f.Name(), got, err, want)
		}
		c.f.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for entries(t, areaDir) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("aside still holds %d entries after the files were closed", entries(t, areaDir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func entries(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// Once opens are off the kernel releases no handle; the daemon must not
// keep a descriptor per file created. Nodes keep descriptors
// (handle.go, iofd.go), but no more than two per slot of the cache.
func TestCreateKeepsNoDescriptor(t *testing.T) {
	mnt, _, _, _, m := testMountAll(t)
	const budget = 50
	c := &m.root.fs.fds
	c.mu.Lock()
	c.limit = budget
	c.mu.Unlock()
	p := filepath.Join(mnt, "first")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(p); err != nil { // an OPEN: opens are off from now on
		t.Fatal(err)
	}
	before := entries(t, "/proc/self/fd")
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("f%d", i)), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if after := entries(t, "/proc/self/fd"); after > before+2*budget+20 {
		t.Errorf("the daemon's descriptors went from %d to %d over 200 files created", before, after)
	}
}

// An O_TMPFILE file is served like any other (through an aside entry
// no record claims), can be linked into the workspace, which journals
// a creation, and its entry goes once the kernel forgets it.
func TestTmpfile(t *testing.T) {
	mnt, backing, j := testMount(t)
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(mnt, unix.O_TMPFILE|unix.O_RDWR, 0o640)
	if err != nil {
		t.Fatalf("O_TMPFILE: %v", err)
	}
	f := os.NewFile(uintptr(fd), "tmpfile")
	if _, err := f.WriteAt([]byte("temporary"), 0); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 32)
	if n, err := f.ReadAt(b, 0); string(b[:n]) != "temporary" {
		t.Errorf("read %q, %v", b[:n], err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Nlink != 0 {
		t.Errorf("fstat: nlink %d, %v; want 0", st.Nlink, err)
	}
	named := filepath.Join(mnt, "named")
	if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, named, unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Fatalf("linking the tmpfile in: %v", err)
	}
	if got, err := os.ReadFile(named); string(got) != "temporary" {
		t.Errorf("named: %q, %v", got, err)
	}
	var created bool
	for _, r := range records(t, j) {
		if r.Path == "named" {
			created = r.Kind == journal.KindCreate
		}
	}
	if !created {
		t.Errorf("linking the tmpfile in is not journaled as a creation: %+v", records(t, j))
	}
	f.Close()
	os.Remove(named)

	excl, err := unix.Open(mnt, unix.O_TMPFILE|unix.O_RDWR|unix.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", excl), unix.AT_FDCWD, named, unix.AT_SYMLINK_FOLLOW)
	unix.Close(excl)
	if err == nil {
		t.Error("linked a tmpfile made with O_EXCL")
	}

	areaDir := filepath.Join(backing, aside.Dir, "aside")
	deadline := time.Now().Add(10 * time.Second)
	for entries(t, areaDir) != 0 { // all of it was new in this turn
		if time.Now().After(deadline) {
			t.Fatalf("aside still holds %d entries after the tmpfiles were closed", entries(t, areaDir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
