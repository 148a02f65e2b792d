package e2e

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// deepName is one component of a deep tree: 200 bytes.
var deepName = strings.Repeat("d", 200)

// deepDepth components make a path of over 6,000 bytes: past PATH_MAX
// for any absolute path, though every request names one component.
const deepDepth = 30

// openDeep walks deepDepth components down from dir (making them with
// mkdir if make) and returns a descriptor of the deepest directory.
func openDeep(t *testing.T, dir string, make bool) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < deepDepth; i++ {
		if make {
			if err := unix.Mkdirat(fd, deepName, 0o755); err != nil && err != unix.EEXIST {
				t.Fatalf("mkdir at depth %d: %v", i, err)
			}
		}
		next, err := unix.Openat(fd, deepName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatalf("open at depth %d: %v", i, err)
		}
		fd = next
	}
	return fd
}

func writeAt(t *testing.T, dir int, name, content string) {
	t.Helper()
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(content)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

func readAt(t *testing.T, dir int, name string) string {
	t.Helper()
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	defer unix.Close(fd)
	b := make([]byte, 4096)
	n, _ := unix.Read(fd, b)
	return string(b[:max(n, 0)])
}

// Every operation works at any depth the backing filesystem accepts,
// and a rollback restores there too.
func TestDeepPaths(t *testing.T) {
	w := newWorkspace(t)
	// A deep tree that exists before the turn.
	top := openDeep(t, w.dir, true)
	writeAt(t, top, "old", "before\n")
	unix.Close(top)
	w.mount()

	w.cowfs("turn", "begin")
	dir := openDeep(t, w.mnt, false)
	writeAt(t, dir, "old", "after\n")
	writeAt(t, dir, "new", "new\n")
	if err := unix.Renameat(dir, "new", dir, "renamed"); err != nil {
		t.Errorf("rename deep: %v", err)
	}
	if err := unix.Mkdirat(dir, "sub", 0o755); err != nil {
		t.Errorf("mkdir deep: %v", err)
	}
	if err := unix.Symlinkat("target", dir, "link"); err != nil {
		t.Errorf("symlink deep: %v", err)
	}
	if err := unix.Fchmodat(dir, "old", 0o600, 0); err != nil {
		t.Errorf("chmod deep: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, "renamed", &st, 0); err != nil {
		t.Errorf("stat deep: %v", err)
	}
	if err := unix.Unlinkat(dir, "link", 0); err != nil {
		t.Errorf("unlink deep: %v", err)
	}
	unix.Close(dir)
	w.cowfs("turn", "end")

	if d := w.turn("1"); d.ChangedPaths < 3 {
		t.Errorf("turn 1 lists %d changed paths, want the deep ones", d.ChangedPaths)
	}
	res := w.rollback("1")
	if res.Counts.Skipped != 0 {
		t.Errorf("rollback skipped %d: %+v", res.Counts.Skipped, res.Paths)
	}
	dir = openDeep(t, w.mnt, false)
	defer unix.Close(dir)
	if got := readAt(t, dir, "old"); got != "before\n" {
		t.Errorf("deep file after rollback: %q", got)
	}
	if err := unix.Fstatat(dir, "old", &st, 0); err != nil || st.Mode&0o777 != 0o644 {
		t.Errorf("deep file mode after rollback: %o, %v", st.Mode&0o777, err)
	}
	for _, gone := range []string{"renamed", "sub", "new"} {
		if err := unix.Fstatat(dir, gone, &st, unix.AT_SYMLINK_NOFOLLOW); !os.IsNotExist(err) {
			t.Errorf("%s after rollback: %v", gone, err)
		}
	}
}
