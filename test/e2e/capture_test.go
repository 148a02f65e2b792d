package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"

	"github.com/cowfs/cowfs/ctl"
)

// Every way a shell changes a workspace is journaled in the open turn,
// listed with the right kind and caller, and cat --at returns the exact
// bytes each file had when the turn began.
func TestCaptureShellCommands(t *testing.T) {
	testenv.NeedTool(t, "setfattr")
	w := newWorkspace(t)
	old := map[string]string{
		"dd.bin":           "0123456789abcdefghij",
		"echo.txt":         "echo: the old content\n",
		"append.txt":       "append: line one\n",
		"sed.txt":          "sed: hello world\n",
		"cp-src.txt":       "cp: the new content\n",
		"cp-dst.txt":       "cp: the old content, longer than the new one\n",
		"mv-src.txt":       "mv: source\n",
		"mv-dst.txt":       "mv: replaced target\n",
		"rm.txt":           "rm: deleted\n",
		"tree/a/one.txt":   "tree one\n",
		"tree/a/b/two.txt": "tree two\n",
		"tree/three.txt":   "tree three\n",
		"chmod.txt":        "chmod\n",
		"touch.txt":        "touch\n",
		"trunc.txt":        "truncate: 0123456789\n",
		"xattr.txt":        "xattr\n",
		"mmap.bin":         strings.Repeat("m", 8192),
		"mmap-gone.bin":    strings.Repeat("g", 8192),
		"link-target.txt":  "hard link target\n",
	}
	w.seed(old)
	w.mount()

	var begun ctl.Turn
	w.cowfsJSON(&begun, "turn", "begin", "--id", "call-1", "--anchor", "msg-1")
	if begun.Num != 1 || begun.State != "open" {
		t.Fatalf("turn begin: %+v", begun)
	}
	w.sh(`
printf XXXX | dd of=dd.bin bs=1 seek=4 conv=notrunc 2>/dev/null
echo new > echo.txt
echo "line two" >> append.txt
sed -i s/hello/HELLO/ sed.txt
cp cp-src.txt cp-dst.txt
mv mv-src.txt mv-dst.txt
rm rm.txt
rm -rf tree
mkdir -p deep/er/est
chmod 600 chmod.txt
touch -d 2001-02-03 touch.txt
ln -s echo.txt symlink
ln link-target.txt hardlink
truncate -s 3 trunc.txt
setfattr -n user.note -v hi xattr.txt
`)
	// The kernel flushes shared mappings at the turn's end at the
	// latest. One file is still mapped then, one no longer.
	unmap := mmapWrite(t, w.path("mmap.bin"), 100, []byte("MMAP"))
	mmapWrite(t, w.path("mmap-gone.bin"), 100, []byte("GONE"))()
	var ended ctl.Turn
	w.cowfsJSON(&ended, "turn", "end")
	unmap()
	if ended.State != "closed" || ended.ChangedPaths == 0 {
		t.Fatalf("turn end: %+v", ended)
	}

	d := w.turn("1")
	changes := map[string]ctl.Change{}
	for _, c := range d.Changes {
		changes[string(c.Path)] = c
	}
	wantKinds := map[string]string{
		"dd.bin": "modified", "echo.txt": "modified", "append.txt": "modified",
		"sed.txt": "modified", "cp-dst.txt": "modified", "mv-dst.txt": "renamed",
		"rm.txt": "deleted", "tree": "deleted", "tree/a": "deleted", "tree/a/b": "deleted",
		"tree/a/one.txt": "deleted", "tree/a/b/two.txt": "deleted", "tree/three.txt": "deleted",
		"deep": "created", "deep/er": "created", "deep/er/est": "created",
		"chmod.txt": "metadata", "touch.txt": "metadata", "symlink": "created",
		"hardlink": "created", "trunc.txt": "modified", "xattr.txt": "metadata",
		"mmap.bin": "modified", "mmap-gone.bin": "modified",
	}
	for p, kind := range wantKinds {
		c, ok := changes[p]
		if !ok {
			t.Errorf("%s: not listed", p)
			continue
		}
		if c.Kind != kind {
			t.Errorf("%s: kind %s, want %s", p, c.Kind, kind)
		}
	}
	for p := range changes {
		if _, ok := wantKinds[p]; !ok {
			t.Errorf("unexpected change %s: %+v", p, changes[p])
		}
	}
	if c := changes["mv-dst.txt"]; c.From != "mv-src.txt" {
		t.Errorf("mv-dst.txt renamed from %q, want mv-src.txt", c.From)
	}
	if c := changes["sed.txt"]; c.Command != "sed" || c.Pid == 0 {
		t.Errorf("sed.txt changed by %q pid %d, want sed", c.Command, c.Pid)
	}
	if c := changes["symlink"]; c.Type != "symlink" {
		t.Errorf("symlink has type %s", c.Type)
	}
	// The kernel flushes mappings with pid 0: the change goes to a
	// process that maps the file then, if one does.
	if c := changes["mmap.bin"]; c.Pid != uint32(os.Getpid()) {
		t.Errorf("mmap.bin attributed to pid %d (%s), want this test, %d", c.Pid, c.Command, os.Getpid())
	}
	if c := changes["mmap-gone.bin"]; c.Pid != 0 {
		t.Errorf("mmap-gone.bin attributed to pid %d (%s), want 0: nothing maps it any more", c.Pid, c.Command)
	}

	// The exact old bytes, by turn number and by the harness's id.
	for p, content := range old {
		if p == "link-target.txt" {
			continue
		}
		for _, at := range []string{"1", "call-1"} {
			got, errOut, code := w.run("cat", "--at", at, p)
			if code != 0 {
				t.Errorf("cat --at %s %s: exit %d: %s", at, p, code, errOut)
			} else if got != content {
				t.Errorf("cat --at %s %s = %q, want %q", at, p, got, content)
			}
		}
	}
	// Paths created in the turn did not exist when it began.
	if _, _, code := w.run("cat", "--at", "1", "deep/er"); code != 5 {
		t.Errorf("cat --at 1 of a path created in the turn: exit %d, want 5 (not found)", code)
	}
	// An absolute path inside the workspace works too.
	if got := w.cowfs("cat", "--at", "1", w.path("sed.txt")); got != old["sed.txt"] {
		t.Errorf("cat --at 1 with an absolute path = %q", got)
	}
	// And the live files are what the commands made.
	if b, _ := os.ReadFile(w.path("sed.txt")); string(b) != "sed: HELLO world\n" {
		t.Errorf("sed.txt is %q", b)
	}
}

// mmapWrite writes data at off through a shared writable mapping
// without msync, and returns what unmaps it and closes the file. The
// kernel writes the page when it likes: at the close (fuse_flush) or at
// the turn's end at the latest.
func mmapWrite(t *testing.T, path string, off int, data []byte) (unmap func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	copy(m[off:], data)
	return func() {
		if err := syscall.Munmap(m); err != nil {
			t.Error(err)
		}
		f.Close()
	}
}
