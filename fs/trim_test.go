package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// known counts the nodes the trimmer holds that the kernel has not
// forgotten.
func (t *trimmer) known() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := 0
	for _, n := range t.ring {
		if !n.Forgotten() {
			k++
		}
	}
	return k
}

// Past MaxNodes, the nodes a walk left behind are pruned and forgotten;
// every file still reads, an open one included, and its name in
// /proc stays whole.
func TestTrimmerPrunesWhatAWalkLeft(t *testing.T) {
	mnt, backing, _, _, m := testMountAll(t)
	const max, files = 200, 1000
	m.root.fs.trim.max = max
	for i := range files {
		os.WriteFile(filepath.Join(backing, fmt.Sprintf("f%d", i)), []byte(fmt.Sprint(i)), 0o644)
	}
	open, err := os.Open(filepath.Join(mnt, "f0"))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	for i := range files {
		if _, err := os.Stat(filepath.Join(mnt, fmt.Sprintf("f%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.root.fs.trim.known() > max && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if k := m.root.fs.trim.known(); k > max {
		t.Fatalf("%d nodes known after the walk (max %d)", k, max)
	}
	if req := m.Requests(); req["FORGET"]+req["BATCH_FORGET"] == 0 {
		t.Errorf("no forgets: %v", req)
	}
	for i := range files {
		b, err := os.ReadFile(filepath.Join(mnt, fmt.Sprintf("f%d", i)))
		if err != nil || string(b) != fmt.Sprint(i) {
			t.Fatalf("f%d reads %q, %v", i, b, err)
		}
	}
	buf := make([]byte, 8)
	if n, err := open.ReadAt(buf, 0); string(buf[:n]) != "0" {
		t.Errorf("the open file reads %q, %v", buf[:n], err)
	}
	if l, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", open.Fd())); strings.Contains(l, "deleted") {
		t.Errorf("the open file is %q", l)
	}
}

// Shed lets go of every node the kernel does not hold, a nested tree's
// directories included (deepest first), and the trimmer of the nodes
// forgotten: what stays known is an open file and the directories above
// it.
func TestShedLetsGoOfATree(t *testing.T) {
	mnt, backing, _, _, m := testMountAll(t)
	var paths []string
	for _, d := range []string{"a/b/c", "a/x", "y"} {
		os.MkdirAll(filepath.Join(backing, d), 0o755)
		for i := range 20 {
			p := filepath.Join(d, fmt.Sprintf("f%d", i))
			os.WriteFile(filepath.Join(backing, p), []byte(p), 0o644)
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(mnt, p)); err != nil {
			t.Fatal(err)
		}
	}
	open, err := os.Open(filepath.Join(mnt, "a/b/c/f0"))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if k := m.root.fs.trim.known(); k < len(paths) {
		t.Fatalf("%d nodes known after the walk, want %d at least", k, len(paths))
	}
	if _, _, err := m.Shed(); err != nil {
		t.Fatal(err)
	}
	m.root.fs.trim.mu.Lock()
	ring := len(m.root.fs.trim.ring)
	m.root.fs.trim.mu.Unlock()
	if ring > len(paths)/2 {
		t.Errorf("the trimmer still holds %d nodes after the shed", ring)
	}
	const held = 4 // a, a/b, a/b/c and the open file
	deadline := time.Now().Add(10 * time.Second)
	for m.root.fs.trim.known() > held && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if k := m.root.fs.trim.known(); k != held {
		t.Errorf("%d nodes known after the shed, want %d", k, held)
	}
	for _, p := range paths {
		if b, err := os.ReadFile(filepath.Join(mnt, p)); err != nil || string(b) != p {
			t.Fatalf("%s reads %q, %v", p, b, err)
		}
	}
	buf := make([]byte, 16)
	if n, _ := open.ReadAt(buf, 0); string(buf[:n]) != "a/b/c/f0" {
		t.Errorf("the open file reads %q", buf[:n])
	}
}
