package fs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A rollback step that moves or rewrites a node while a request holds
// its kept content descriptor (so the descriptor cannot be closed) must
// still keep later requests from using it: they open the node afresh.
func TestRollbackRetiresKeptDescriptorInUse(t *testing.T) {
	mnt, _, _, _, m := testMountAll(t)
	p := filepath.Join(mnt, "f")
	if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, ok := m.node("f").Operations().(*Node)
	if !ok {
		t.Fatal("no node for f")
	}
	if _, err := os.ReadFile(p); err != nil { // a READ: a descriptor is kept
		t.Fatal(err)
	}
	fd, ok := n.keptIO(syscall.O_RDONLY) // as a request in flight holds it
	if !ok {
		t.Fatal("reading f kept no descriptor")
	}
	m.Changed("f", n.StableAttr().Ino, false)
	n.fd.mu.RUnlock()
	if again, ok := n.keptIO(syscall.O_RDONLY); ok {
		n.fd.mu.RUnlock()
		t.Fatalf("descriptor %d (kept %d) still used after a rollback changed f", again, fd)
	}
}

// A writable descriptor is let go of once unused for a while; a
// read-only one stays while the node is known.
func TestWritableDescriptorLetGo(t *testing.T) {
	mnt, _, _, _, m := testMountAll(t)
	p := filepath.Join(mnt, "f")
	if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := m.node("f").Operations().(*Node)
	kept := func() (open bool, mode int) {
		n.fd.mu.RLock()
		defer n.fd.mu.RUnlock()
		return n.fd.io.open, n.fd.io.mode
	}
	if open, mode := kept(); !open || mode != syscall.O_RDWR {
		t.Fatalf("after a write: kept %v, mode %d; want a writable descriptor", open, mode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for open, _ := kept(); open; open, _ = kept() {
		if time.Now().After(deadline) {
			t.Fatal("the writable descriptor is still kept 10 s after the write")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
	if open, mode := kept(); !open || mode != syscall.O_RDONLY {
		t.Fatalf("after a read: kept %v, mode %d; want a read-only descriptor", open, mode)
	}
}
