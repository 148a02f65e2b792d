package fs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/internal/_gofuse/posixtest"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/test/testenv"
)

// testMount mounts a cowfs over a fresh backing directory in-process,
// with a real journal, and unmounts it when the test ends.
func testMount(t *testing.T) (mnt, backing string, j *journal.Journal) {
	t.Helper()
	mnt, backing, j, _ = testMountArea(t)
	return mnt, backing, j
}

// testMountArea is testMount that also returns the aside area.
func testMountArea(t *testing.T) (mnt, backing string, j *journal.Journal, a *aside.Area) {
	t.Helper()
	mnt, backing, j, a, _ = testMountAll(t)
	return mnt, backing, j, a
}

// testMountAll is testMount that also returns the aside area and the
// mount.
func testMountAll(t *testing.T) (mnt, backing string, j *journal.Journal, a *aside.Area, m *Mount) {
	t.Helper()
	testenv.NeedFUSE(t)
	dir := t.TempDir()
	backing = filepath.Join(dir, "backing")
	mnt = filepath.Join(dir, "mnt")
	os.Mkdir(backing, 0o755)
	os.Mkdir(mnt, 0o755)
	j = journal.TestJournal(t, journal.Options{})
	root, err := unix.Open(backing, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(root) })
	a, err = aside.Open(root, "test")
	if err != nil {
		t.Fatal(err)
	}
	// Passthrough off: these tests watch the daemon serve every read
	// and write (test/e2e/passthrough_test.go covers passthrough).
	m, err = New(Config{Root: root, Mountpoint: mnt, Journal: j, Aside: a, NoPassthrough: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	return mnt, backing, j, a, m
}

// go-fuse's POSIX conformance tests, against a cowfs mount with a turn
// open so every change is journaled.
func TestPosix(t *testing.T) {
	for name, fn := range posixtest.All {
		if name == "FcntlFlockLocksFile" {
			// It wants a process's read lock on one descriptor to
			// conflict with its write lock on another, which POSIX
			// record locks do not do (they belong to the process; try
			// it on ext4). go-fuse's loopback does it because it takes
			// the locks in its own process. cowfs leaves locks to the
			// kernel (io.go); TestLocks checks them.
			continue
		}
		t.Run(name, func(t *testing.T) {
			mnt, _, j := testMount(t)
			if _, err := j.BeginTurn("", "", time.Now()); err != nil {
				t.Fatal(err)
			}
			fn(t, mnt)
		})
	}
}

func records(t *testing.T, j *journal.Journal) []*journal.Record {
	var rs []*journal.Record
	if err := j.Scan(0, 0, false, func(r *journal.Record) error { rs = append(rs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestHidesPrivateDir(t *testing.T) {
	mnt, backing, _ := testMount(t)
	if _, err := os.Stat(filepath.Join(backing, aside.Dir)); err != nil {
		t.Fatalf("private dir missing in backing: %v", err)
	}
	ents, _ := os.ReadDir(mnt)
	for _, e := range ents {
		if e.Name() == aside.Dir {
			t.Fatalf("%s visible in the mount", aside.Dir)
		}
	}
	if _, err := os.Stat(filepath.Join(mnt, aside.Dir)); !os.IsNotExist(err) {
		t.Fatalf("stat %s through the mount: %v", aside.Dir, err)
	}
	if err := os.Mkdir(filepath.Join(mnt, aside.Dir), 0o755); err == nil {
		t.Fatalf("mkdir %s through the mount succeeded", aside.Dir)
	}
}

func TestUnlinkMovesAside(t *testing.T) {
	mnt, backing, j := testMount(t)
	p := filepath.Join(mnt, "f")
	os.WriteFile(p, []byte("hello"), 0o644)
	j.BeginTurn("", "", time.Now())
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	var rm *journal.Record
	for _, r := range records(t, j) {
		if r.Kind == journal.KindRemove {
			rm = r
		}
	}
	if rm == nil || rm.Path != "f" || rm.Aside == "" || rm.Turn != 1 {
		t.Fatalf("remove record: %+v", rm)
	}
	b, err := os.ReadFile(filepath.Join(backing, aside.Dir, "aside", rm.Aside))
	if err != nil || string(b) != "hello" {
		t.Fatalf("aside content %q %v", b, err)
	}
}
