package journal

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestBadgerMappingsCountResidentPages maps three files as Badger
// does — a table read whole, a table never read, a memtable log — and
// checks what the trimmer sees: the two tables, with the bytes smaps
// gives as resident (the reading it replaced), the log not at all.
func TestBadgerMappingsCountResidentPages(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 20
	mapFile := func(name string) []byte {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte{7}, size), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Munmap(m) })
		return m
	}
	read := mapFile("000001.sst")
	unread := mapFile("000002.sst")
	mem := mapFile("00001.mem")
	touched := 0
	for i := 0; i < size; i += os.Getpagesize() {
		touched += int(read[i]) + int(mem[i])
	}
	if want := 2 * 7 * size / os.Getpagesize(); touched != want {
		t.Fatalf("read %d through the mappings, want %d", touched, want)
	}

	maps := badgerMappings(dir)
	if len(maps) != 2 {
		t.Fatalf("mappings %+v, want the two tables", maps)
	}
	want := smapsRss(t)
	for _, m := range maps {
		if m.rss != want[m.start] {
			t.Errorf("mapping at %#x: %d bytes resident, smaps says %d", m.start, m.rss, want[m.start])
		}
		switch m.start {
		case addr(read):
			if m.rss != size {
				t.Errorf("table read whole: %d bytes resident, want %d", m.rss, size)
			}
		case addr(unread):
			if m.rss != 0 {
				t.Errorf("table never read: %d bytes resident", m.rss)
			}
		default:
			t.Errorf("mapping at %#x is neither table", m.start)
		}
	}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// smapsRss is the resident bytes of every mapping, by start address,
// as /proc/self/smaps gives them.
func smapsRss(t *testing.T) map[uintptr]int64 {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[uintptr]int64{}
	var cur uintptr
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Bytes()
		if r, _, ok := bytes.Cut(line, []byte(" ")); ok && bytes.Contains(r, []byte("-")) && !bytes.HasSuffix(r, []byte(":")) {
			lo, _, _ := bytes.Cut(r, []byte("-"))
			v, _ := strconv.ParseUint(string(lo), 16, 64)
			cur = uintptr(v)
			continue
		}
		if bytes.HasPrefix(line, []byte("Rss:")) {
			kb, _ := strconv.ParseInt(string(bytes.Fields(line)[1]), 10, 64)
			out[cur] = kb << 10
		}
	}
	return out
}
