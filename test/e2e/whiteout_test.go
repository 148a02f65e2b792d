package e2e

import (
	"testing"

	"golang.org/x/sys/unix"
)

// rename(RENAME_WHITEOUT) works as natively (a whiteout, a character
// device 0:0, at the old name) and a rollback undoes it (#15).
func TestRenameWhiteout(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "f\n", "g": "g\n"})
	w.mount()
	before := snapshot(t, w.mnt)
	w.cowfs("turn", "begin")
	if err := unix.Renameat2(unix.AT_FDCWD, w.path("f"), unix.AT_FDCWD, w.path("h"), unix.RENAME_WHITEOUT); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, w.path("g"), unix.AT_FDCWD, w.path("h"), unix.RENAME_WHITEOUT); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(w.path("f"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Fatalf("no whiteout at f: %v %o", err, st.Mode)
	}
	w.cowfs("turn", "end")
	w.rollback("1")
	sameTree(t, w.mnt, before, "after rolling back the whiteout renames")
}
