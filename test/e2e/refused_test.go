package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/test/testenv"
)

// Inode flags (linux/fs.h), which x/sys/unix does not name.
const (
	fsImmutable = 0x10 // FS_IMMUTABLE_FL, chattr +i
	fsAppend    = 0x20 // FS_APPEND_FL, chattr +a
)

// chattr sets attribute flag (+i, +a) on the backing file p before
// the mount, and returns what takes it off again, which the test's end
// does too, so the directory can be removed. It clears the flags through
// a descriptor opened beforehand: once the workspace is mounted in
// place, p reaches the mount, which refuses the ioctl.
func chattr(t *testing.T, flag, p string) (clear func()) {
	t.Helper()
	testenv.NeedTool(t, "chattr")
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", flag, p).CombinedOutput(); err != nil {
		unix.Close(fd)
		testenv.Skip(t, "the backing filesystem has no "+flag+" flag: "+string(out))
	}
	var once sync.Once
	clear = func() {
		once.Do(func() {
			defer unix.Close(fd)
			fl, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
			if err == nil {
				err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(fl&^(fsImmutable|fsAppend)))
			}
			if err != nil {
				t.Errorf("clearing the flags of %s: %v", p, err)
			}
		})
	}
	t.Cleanup(clear)
	return clear
}

// An operation the backing filesystem refuses leaves no record: chmod,
// chown, touch, truncation, xattrs, removal and renames of an immutable
// file fail with EPERM through the mount as natively, the turn lists
// only what really changed, and its rollback restores that, exit 0
// (it stopped partial, trying to put back the attributes of the file
// that never changed).
func TestRefusedOperationLeavesNoRecord(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"imm": "fixed\n", "a.txt": "one\n", "d/imm2": "x\n"})
	chattr(t, "+i", filepath.Join(w.dir, "imm"))
	chattr(t, "+i", filepath.Join(w.dir, "d"))
	w.mount()
	before := snapshot(t, w.mnt)

	w.cowfs("turn", "begin")
	w.sh("echo ONE > a.txt")
	refused := map[string]func() error{
		"chmod":       func() error { return os.Chmod(w.path("imm"), 0o600) },
		"chown":       func() error { return os.Chown(w.path("imm"), 65534, 65534) },
		"utimes":      func() error { return syscall.UtimesNano(w.path("imm"), []syscall.Timespec{{Sec: 1}, {Sec: 1}}) },
		"truncate":    func() error { return os.Truncate(w.path("imm"), 0) },
		"setxattr":    func() error { return syscall.Setxattr(w.path("imm"), "user.k", []byte("v"), 0) },
		"removexattr": func() error { return syscall.Removexattr(w.path("imm"), "user.k") },
		"unlink":      func() error { return os.Remove(w.path("imm")) },
		"rename":      func() error { return os.Rename(w.path("imm"), w.path("moved")) },
		"rename-onto": func() error { return os.Rename(w.path("a.txt"), w.path("imm")) },
		"link":        func() error { return os.Link(w.path("imm"), w.path("imm.link")) },
		"mkdir-in":    func() error { return os.Mkdir(w.path("d/sub"), 0o755) },
		"create-in":   func() error { return os.WriteFile(w.path("d/new"), nil, 0o644) },
		"unlink-in":   func() error { return os.Remove(w.path("d/imm2")) },
	}
	for name, op := range refused {
		if err := op(); !errors.Is(err, syscall.EPERM) && !(name == "removexattr" && errors.Is(err, syscall.ENODATA)) {
			t.Errorf("%s of an immutable file: %v, want EPERM", name, err)
		}
	}
	w.cowfs("turn", "end")

	d := w.turn("1")
	if len(d.Changes) != 1 || d.Changes[0].Path != "a.txt" {
		t.Errorf("the turn lists %+v; want a.txt alone", d.Changes)
	}
	res, code := rollbackJSON(w, "1")
	if code != 0 || !res.Complete {
		t.Fatalf("rollback of the turn: exit %d, %+v", code, res)
	}
	sameTree(t, w.mnt, before, "after the rollback")
}

// An append-only file takes appends through the mount as natively, and
// refuses the rest (a truncation, an overwrite) with EPERM, as natively.
// The append journals nothing but the old size, which a rollback puts
// back once the flag is off.
func TestAppendOnlyFile(t *testing.T) {
	w := newWorkspace(t)
	native := filepath.Join(filepath.Dir(w.dir), "native")
	os.Mkdir(native, 0o755)
	var clearWs func()
	for _, dir := range []string{w.dir, native} {
		if err := os.WriteFile(filepath.Join(dir, "log"), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		clear := chattr(t, "+a", filepath.Join(dir, "log"))
		if dir == w.dir {
			clearWs = clear
		}
	}
	w.mount()

	w.cowfs("turn", "begin")
	for _, dir := range []string{native, w.mnt} {
		p := filepath.Join(dir, "log")
		if out, err := exec.Command("sh", "-c", "echo two >> "+p).CombinedOutput(); err != nil {
			t.Errorf("append to %s: %v: %s", p, err, out)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatalf("open %s O_APPEND: %v", p, err)
		}
		if _, err := f.Write([]byte("three\n")); err != nil {
			t.Errorf("append to %s by write: %v", p, err)
		}
		if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 1<<16); err != nil {
			t.Errorf("allocating %s: %v", p, err)
		}
		if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE|unix.FALLOC_FL_PUNCH_HOLE, 0, 4); !errors.Is(err, syscall.EPERM) {
			t.Errorf("punching a hole in %s: %v, want EPERM", p, err)
		}
		f.Close()
		if err := os.Truncate(p, 0); !errors.Is(err, syscall.EPERM) {
			t.Errorf("truncate %s: %v, want EPERM", p, err)
		}
		if out, err := exec.Command("sh", "-c", "echo over > "+p).CombinedOutput(); err == nil {
			t.Errorf("overwrite of %s succeeded: %s", p, out)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "one\ntwo\nthree\n" {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	w.cowfs("turn", "end")

	d := w.turn("1")
	if len(d.Changes) != 1 || d.Changes[0].Path != "log" || d.Changes[0].Kind != "modified" {
		t.Errorf("the turn lists %+v; want log, modified", d.Changes)
	}
	clearWs()
	if res, code := rollbackJSON(w, "1", "--force"); code != 0 || !res.Complete {
		t.Fatalf("rollback: exit %d, %+v", code, res)
	}
	if b, _ := os.ReadFile(w.path("log")); string(b) != "one\n" {
		t.Errorf("log after the rollback: %q", b)
	}
}
