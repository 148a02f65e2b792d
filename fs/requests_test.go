package fs

import (
	"os"
	"path/filepath"
	"testing"
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
