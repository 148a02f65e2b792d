package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/journal"
)

// Files are created with MKNOD and opened without a CREATE, and no
// RELEASE follows them even before an OPEN has taught the kernel no_open
// (it sent one per file CREATE opened until then); a file created
// read-only is writable through the descriptor that created it, as
// natively.
func TestCreateSendsNoRelease(t *testing.T) {
	mnt, _, _, _, m := testMountAll(t)
	if err := os.WriteFile(filepath.Join(mnt, "first"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := m.Requests()
	for i := range 50 {
		f, err := os.OpenFile(filepath.Join(mnt, fmt.Sprint(i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("read-only, written once")); err != nil {
			t.Fatalf("writing a file created read-only: %v", err)
		}
		f.Close()
	}
	time.Sleep(50 * time.Millisecond) // a RELEASE comes after close returns
	after := m.Requests()
	if n := after["MKNOD"] - before["MKNOD"]; n != 50 {
		t.Errorf("%d MKNOD for 50 files", n)
	}
	for _, op := range []string{"CREATE", "RELEASE"} {
		if n := after[op] - before[op]; n != 0 {
			t.Errorf("%d %s for 50 files", n, op)
		}
	}
	b, err := os.ReadFile(filepath.Join(mnt, "7"))
	if err != nil || string(b) != "read-only, written once" {
		t.Fatalf("content %q, %v", b, err)
	}
}

// A name made behind the mount's back after the kernel cached it as
// missing: open(O_CREAT) opens the file that exists — its truncation
// journaled like any — and O_EXCL and mkdir fail with EEXIST, as on the
// backing filesystem.
func TestCreateOverStaleNegativeEntry(t *testing.T) {
	mnt, backing, j := testMount(t)
	j.BeginTurn("", "", time.Now())
	for _, name := range []string{"f", "g", "d"} {
		if _, err := os.Lstat(filepath.Join(mnt, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s before: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(backing, name), []byte("made behind the mount"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(mnt, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the kernel's negative entry is not stale: %v", name, err)
		}
	}

	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("new"), 0o644); err != nil {
		t.Fatalf("open(O_CREAT|O_TRUNC) of a name made behind the mount: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(backing, "f")); string(b) != "new" {
		t.Fatalf("backing content %q", b)
	}
	var cut *journal.Record
	for _, r := range records(t, j) {
		if r.Path == "f" && r.Kind == journal.KindData {
			cut = r
		}
		if r.Path == "f" && r.Kind == journal.KindCreate {
			t.Fatalf("f journaled as created: %+v", r)
		}
	}
	if cut == nil || cut.Len != int64(len("made behind the mount")) {
		t.Fatalf("the truncation's pre-image: %+v", cut)
	}

	if _, err := os.OpenFile(filepath.Join(mnt, "g"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("O_EXCL over a stale negative entry: %v", err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "d"), 0o755); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("mkdir over a stale negative entry: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(mnt, "g")); string(b) != "made behind the mount" {
		t.Fatalf("g through the mount: %q", b)
	}
}
