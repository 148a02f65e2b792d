package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/testenv"
)

// ext4JournalFS mounts a small ext4 filesystem on a loop device for the
// journal, with errors=remount-ro, and returns the journal directory in
// it and the device's name (loopN). It is unmounted, and the device
// detached, after the workspace's daemon has stopped.
func ext4JournalFS(t *testing.T, w *workspace) (jdir, dev string) {
	t.Helper()
	for _, tool := range []string{"mkfs.ext4", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, tool+" is not installed")
		}
	}
	img := filepath.Join(t.TempDir(), "journal.img")
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img, "64M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).Output()
	if err != nil {
		testenv.Skip(t, "no loop device: "+err.Error())
	}
	loop := strings.TrimSpace(string(out))
	jfs := filepath.Join(t.TempDir(), "journalfs")
	os.Mkdir(jfs, 0o700)
	if err := syscall.Mount(loop, jfs, "ext4", 0, "errors=remount-ro"); err != nil {
		exec.Command("losetup", "-d", loop).Run()
		testenv.Skip(t, "cannot mount ext4 on "+loop+": "+err.Error())
	}
	// Registered after newWorkspace's cleanup, so it runs first.
	t.Cleanup(func() {
		w.cleanup()
		w.pids = nil
		if err := syscall.Unmount(jfs, 0); err != nil {
			syscall.Unmount(jfs, syscall.MNT_DETACH)
		}
		exec.Command("losetup", "-d", loop).Run()
	})
	return filepath.Join(jfs, "journal"), filepath.Base(loop)
}

// The journal's filesystem goes read-only while mounted (ext4 after an
// error, with errors=remount-ro, as a failing disk does): a change that
// needs a record fails with EIO or EROFS and never reaches the backing
// file, status and the events say why, and umount still stops the
// daemon.
func TestJournalFilesystemGoesReadOnly(t *testing.T) {
	w := newWorkspace(t)
	jdir, dev := ext4JournalFS(t, w)
	names := "abcdefghijklmnopqrst"
	files := map[string]string{}
	for _, c := range names {
		files[string(c)] = "before\n"
	}
	w.seed(files)
	w.mount("--journal", jdir)
	c := ctl.NewClient(w.status().Socket)
	f := follow(t, c, 0)
	defer f.stop()
	w.cowfs("turn", "begin")
	w.sh("echo changed >> a")

	trigger := filepath.Join("/sys/fs/ext4", dev, "trigger_fs_error")
	if err := os.WriteFile(trigger, []byte("cowfs test\n"), 0o200); err != nil {
		testenv.Skip(t, "cannot trigger an ext4 error: "+err.Error())
	}
	// Since Linux 6.6 ext4 only marks itself shut down: statfs still
	// shows it writable, and its writes fail with EROFS.

	// Each file is touched for the first time in the turn, so each
	// write needs a record: the first that fails, and every one after
	// it, must leave its backing file as it was.
	failed := -1
	for i, c := range names[1:] {
		err := appendTo(w.path(string(c)), "lost?\n")
		if err != nil {
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.EROFS) {
				t.Fatalf("write to %c: %v, want EIO or EROFS", c, err)
			}
			if failed < 0 {
				failed = i + 1
			}
		} else if failed >= 0 {
			t.Fatalf("write to %c succeeded after a write failed for the read-only journal", c)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if failed < 0 {
		t.Fatalf("every write succeeded with the journal's filesystem read-only")
	}
	for _, c := range names[failed:] {
		b, err := os.ReadFile(filepath.Join(w.dir, string(c)))
		if err != nil || string(b) != "before\n" {
			t.Errorf("backing %c after its write failed: %q, %v (want it unchanged)", c, b, err)
		}
	}
	if st := w.status(); !refusesWrites(st.JournalError) {
		t.Errorf("status journal_error = %q, want it to say the filesystem refuses writes", st.JournalError)
	}
	f.waitFor(t, "journal_error event", func(e ctl.Event) bool {
		return e.Type == ctl.EventJournalError && refusesWrites(e.Message)
	})
	umountStopsDaemon(t, w)
	t.Logf("first write refused: #%d of %d", failed, len(names)-1)
}

// refusesWrites reports whether a journal error says its filesystem
// takes no more writes.
func refusesWrites(msg string) bool {
	return strings.Contains(msg, "read-only") || strings.Contains(msg, "refuses writes")
}
