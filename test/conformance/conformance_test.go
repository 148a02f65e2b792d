package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/fs"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/test/testenv"
)

func TestMain(m *testing.M) {
	Child() // a step's process runs the step and exits here
	os.Exit(m.Run())
}

// TestConformance runs every case in a plain directory and in a cowfs
// mount with a turn open, and fails on any difference.
func TestConformance(t *testing.T) {
	testenv.NeedFUSE(t)
	base := t.TempDir()
	// Steps run as other users: they must reach the case directories.
	for p := base; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	// The test binary, where every user may run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "step")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	native := filepath.Join(base, "native")
	mnt := mountTurn(t, base)
	os.Mkdir(native, 0o755)
	os.Setenv(BackingEnv, mnt+"="+filepath.Join(base, "backing"))
	t.Cleanup(func() {
		// A case that stopped half way may leave inode flags that keep
		// the directory from being removed.
		if _, err := exec.LookPath("chattr"); err == nil {
			exec.Command("chattr", "-R", "-f", "-i", "-a", native, filepath.Join(base, "backing")).Run()
		}
	})
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if c.Needs != "" {
				testenv.NeedTool(t, c.Needs)
			}
			want := runCase(t, bin, native, c)
			got := runCase(t, bin, mnt, c)
			if d := diff(want, got); d != "" {
				t.Errorf("cowfs differs from the plain directory (- native, + cowfs):\n%s", d)
			}
		})
	}
}

// runCase runs c in a fresh directory under top and returns the result
// of every call and what it left.
func runCase(t *testing.T, bin, top string, c Case) []string {
	t.Helper()
	name := strings.ReplaceAll(c.Name, "/", "-")
	dir := filepath.Join(top, name)
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	other, err := os.MkdirTemp("/dev/shm", "cowfs-conformance-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(other, 0o1777)
	defer os.RemoveAll(other)
	os.Setenv(OtherEnv, other)
	var out []string
	for i, s := range c.Steps {
		lines, err := RunStep(bin, dir, s)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, l := range lines {
			out = append(out, "step "+string(rune('0'+i))+" as "+uidName(s.As.Uid)+": "+l)
		}
	}
	for _, p := range c.Observe {
		out = append(out, Observe(dir, p))
	}
	return out
}

func uidName(uid uint32) string {
	switch uid {
	case 0:
		return "root"
	case 65534:
		return "nobody"
	case 1001:
		return "alice"
	case 1002:
		return "member"
	}
	return "?"
}

// diff lists the lines where a and b differ.
func diff(a, b []string) string {
	var d strings.Builder
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			d.WriteString("- " + x + "\n+ " + y + "\n")
		}
	}
	return d.String()
}

// mountTurn mounts cowfs in-process over base/backing at base/mnt, with
// a real journal and a turn open, and unmounts it when the test ends.
func mountTurn(t *testing.T, base string) string {
	t.Helper()
	backing := filepath.Join(base, "backing")
	mnt := filepath.Join(base, "mnt")
	os.Mkdir(backing, 0o755)
	os.Mkdir(mnt, 0o755)
	j := journal.TestJournal(t, journal.Options{})
	root, err := unix.Open(backing, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(root) })
	a, err := aside.Open(root, "conformance")
	if err != nil {
		t.Fatal(err)
	}
	m, err := fs.New(fs.Config{Root: root, Mountpoint: mnt, Journal: j, Aside: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	return mnt
}
