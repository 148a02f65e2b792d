package fs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// The mount leaves the process's umask alone: the daemon's own files
// get the modes their code asks for under it, also while creations
// through the mount (which run with umask 0 on their thread) go on;
// and those get the caller's umask, not the daemon's.
func TestUmaskOfTheProcessKept(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	mnt, _, _ := testMount(t)
	if got := syscall.Umask(0o022); got != 0o022 {
		t.Fatalf("umask after mounting: %04o, want 0022", got)
	}

	own := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() { // the mount's creations
		defer wg.Done()
		for i := range 300 {
			if err := os.Mkdir(filepath.Join(mnt, fmt.Sprint("d", i)), 0o777); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() { // the daemon's own
		defer wg.Done()
		for i := range 300 {
			p := filepath.Join(own, fmt.Sprint("f", i))
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o666)
			if err != nil {
				errs <- err
				return
			}
			f.Close()
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
				errs <- fmt.Errorf("%s: %v %v, want -rw-r--r--", p, st.Mode(), err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// A caller with umask 0 gets what it asks for, whatever the
	// daemon's.
	out, err := exec.Command("sh", "-c", "cd "+mnt+" && umask 0 && mkdir open && : > open/f && mkfifo open/p").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for p, want := range map[string]os.FileMode{"open": 0o777, "open/f": 0o666, "open/p": 0o666} {
		if st, err := os.Lstat(filepath.Join(mnt, p)); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, st.Mode(), err, want)
		}
	}
}

// The daemon's umask is read as the process has it when a mount starts:
// creations whose mode it would not change skip setting the thread's.
func TestOwnUmaskNoted(t *testing.T) {
	runtime.LockOSThread() // a thread an earlier mount unshared has a umask of its own
	defer runtime.UnlockOSThread()
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	noteOwnUmask()
	defer noteOwnUmask()
	if got := ownUmask.Load(); got != 0o027 {
		t.Fatalf("umask noted: %04o, want 0027", got)
	}
}
