package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The daemon keeps a file's content descriptor across requests
// (fs/iofd.go). A process that had the file open while a rollback put
// the old content back writes, afterwards, into the file the workspace
// shows — a change outside turns — or is refused, never into something
// else; if refused, the unrevert brings back exactly what the turn
// left.
func TestWriteThroughOpenFileAfterRollback(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f.txt": "v0\n"})
	w.mount()
	w.cowfs("turn", "begin")
	f, err := os.OpenFile(w.path("f.txt"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("v1\n"), 0); err != nil {
		t.Fatal(err)
	}
	w.cowfs("turn", "end")
	w.rollback("1")
	w.wantFile("after the rollback", "f.txt", "v0\n")

	_, werr := f.WriteAt([]byte("XX"), 0)
	b, err := os.ReadFile(w.path("f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if werr == nil {
		if string(b) != "XX\n" {
			t.Fatalf("a write through a file open across the rollback succeeded, but f.txt reads %q: it went somewhere else", b)
		}
		return // a change outside turns: the unrevert rightly leaves it
	}
	if string(b) != "v0\n" {
		t.Fatalf("a refused write (%v) changed f.txt to %q", werr, b)
	}
	w.cowfs("unrevert")
	w.wantFile("after the unrevert", "f.txt", "v1\n")
}

// A file written through the mount can be executed through the mount
// at once, and from the backing directory once the daemon has let go of
// its writable descriptor (within a second of the last write).
func TestExecAfterWrite(t *testing.T) {
	w := newWorkspace(t)
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	if err := os.Mkdir(w.mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	w.mount()
	w.cowfs("turn", "begin")
	script := "#!/bin/sh\necho ran\n"
	if err := os.WriteFile(w.path("run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(w.path("run.sh")).CombinedOutput(); err != nil || string(out) != "ran\n" {
		t.Fatalf("exec through the mount right after the write: %v: %q", err, out)
	}
	backing := filepath.Join(w.dir, "run.sh")
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(backing).CombinedOutput()
		if err == nil && string(out) == "ran\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exec of the backing file 10 s after the write: %v: %q (the daemon keeps it open for writing?)", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.cowfs("turn", "end")
}
