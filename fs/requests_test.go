package fs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The mount counts the requests it serves, per operation.
func TestRequestsCounted(t *testing.T) {
	mnt, _, _, _, m := testMountAll(t)
	before := m.Requests()
	p := filepath.Join(mnt, "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	after := m.Requests()
	for _, op := range []string{"MKNOD", "WRITE", "MKDIR"} {
		if after[op] <= before[op] {
			t.Errorf("%s: %d before, %d after", op, before[op], after[op])
		}
	}
	for op, n := range after {
		if n == 0 {
			t.Errorf("%s listed with no requests", op)
		}
	}
}

// A SETATTR's answer carries fresh attributes, cached like any other:
// a stat right after chmod, chown or utimes asks the daemon nothing
// (untar stats each directory between its chown and its chmod).
func TestSetattrAnswerCached(t *testing.T) {
	mnt, _, _, _, m := testMountAll(t)
	p := filepath.Join(mnt, "d")
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	syscall.Stat(p, &st)
	before := m.Requests()
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(p, &st); err != nil || st.Mode&0o777 != 0o755 {
		t.Fatalf("stat after chmod: mode %o, %v", st.Mode&0o777, err)
	}
	if err := os.Chtimes(p, time.Unix(1e9, 0), time.Unix(1e9, 0)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(p, &st); err != nil || st.Mtim.Sec != 1e9 {
		t.Fatalf("stat after utimes: mtime %d, %v", st.Mtim.Sec, err)
	}
	after := m.Requests()
	if n := after["GETATTR"] + after["STATX"] - before["GETATTR"] - before["STATX"]; n != 0 {
		t.Errorf("stats right after SETATTRs asked the daemon %d times", n)
	}
}
