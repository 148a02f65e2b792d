package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// Directories are listed without OPENDIR or RELEASEDIR, across several
// READDIRPLUS requests (so from offsets the kernel gives back), with the
// root hiding cowfs's private directory, and listings follow changes.
func TestListingWithoutOpendir(t *testing.T) {
	mnt, backing, _, _, m := testMountAll(t)
	dir := filepath.Join(mnt, "big")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 3000 { // ~40 pages of entries: many READDIRPLUS
		name := fmt.Sprintf("a-rather-long-name-to-fill-pages-%04d", i)
		want = append(want, name)
		if err := os.WriteFile(filepath.Join(backing, "big", name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := m.Requests()
	list := func(d string) []string {
		t.Helper()
		es, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	if got := list(dir); !slices.Equal(got, want) {
		t.Fatalf("listed %d entries, want %d", len(got), len(want))
	}
	if got := list(mnt); !slices.Equal(got, []string{"big"}) {
		t.Fatalf("root lists %q", got)
	}
	if err := os.Remove(filepath.Join(dir, want[0])); err != nil {
		t.Fatal(err)
	}
	if got := list(dir); !slices.Equal(got, want[1:]) {
		t.Fatalf("after a removal: %d entries, want %d", len(got), len(want)-1)
	}
	after := m.Requests()
	if after["READDIRPLUS"] < before["READDIRPLUS"]+10 {
		t.Errorf("READDIRPLUS %d -> %d: the listing did not take several requests", before["READDIRPLUS"], after["READDIRPLUS"])
	}
	for _, op := range []string{"OPENDIR", "RELEASEDIR"} {
		if after[op] > 1 {
			t.Errorf("%d %s requests (the first only should come)", after[op], op)
		}
	}

	// Seeking back to an offset a listing returned goes on from there.
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	first := readNames(t, fd, 4096)
	off, err := unix.Seek(fd, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	next := readNames(t, fd, 4096)
	if _, err := unix.Seek(fd, off, 0); err != nil {
		t.Fatal(err)
	}
	if again := readNames(t, fd, 4096); !slices.Equal(again, next) || len(first) == 0 || len(next) == 0 {
		t.Fatalf("after seeking back: %d names, then %d; %d read before", len(again), len(next), len(first))
	}
	if err := unix.Fsync(fd); err != nil {
		t.Fatalf("fsync of a directory: %v", err)
	}
}

// readNames reads one getdents buffer of n bytes from fd.
func readNames(t *testing.T, fd, n int) []string {
	t.Helper()
	buf := make([]byte, n)
	got, err := unix.Getdents(fd, buf)
	if err != nil {
		t.Fatal(err)
	}
	_, _, names := unix.ParseDirent(buf[:got], -1, nil)
	return names
}
