package sparse

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/test/testenv"
)

// file makes a file of size bytes with data at the given offsets (4
// KiB of 'd' each), the rest holes; it skips the test where the
// filesystem keeps no holes.
func file(t *testing.T, size int64, data ...int64) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, off := range data {
		if _, err := f.WriteAt(bytes.Repeat([]byte("d"), 4096), off); err != nil {
			t.Fatal(err)
		}
	}
	if ext := Data(int(f.Fd()), 0, size); len(ext) != len(data) {
		testenv.Skip(t, fmt.Sprintf("the test filesystem keeps no holes: extents %v", ext))
	}
	return f
}

func blocks(t *testing.T, f *os.File) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks
}

func TestDataAndHoles(t *testing.T) {
	const mb = 1 << 20
	f := file(t, 64*mb, 0, 16*mb, 32*mb+4096)
	got := Data(int(f.Fd()), 100, 40*mb)
	want := []Extent{{100, 4096 - 100}, {16 * mb, 4096}, {32*mb + 4096, 4096}}
	if len(got) != len(want) {
		t.Fatalf("Data: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Data: %v, want %v", got, want)
		}
	}
	holes := Holes(got, 100, 40*mb)
	wantHoles := []Extent{{4096, 16*mb - 4096}, {16*mb + 4096, 16 * mb}, {32*mb + 8192, 8*mb - 8192}}
	if len(holes) != len(wantHoles) {
		t.Fatalf("Holes: %v, want %v", holes, wantHoles)
	}
	for i := range wantHoles {
		if holes[i] != wantHoles[i] {
			t.Fatalf("Holes: %v, want %v", holes, wantHoles)
		}
	}
	if ext := Data(int(f.Fd()), 33*mb, 64*mb); len(ext) != 0 {
		t.Errorf("data in a trailing hole: %v", ext)
	}
}

// TestZero: a range becomes a hole; where punching is refused, only the
// data in the range is overwritten with zeros.
func TestZero(t *testing.T) {
	const size = 1 << 30
	f := file(t, size, 0, 4096*10, size-4096)
	if wrote, err := Zero(f, 4096, size-8192); err != nil || wrote {
		t.Fatalf("Zero: wrote %v, %v", wrote, err)
	}
	if ext := Data(int(f.Fd()), 0, size); len(ext) != 2 || ext[0].Off != 0 || ext[1].Off != size-4096 {
		t.Errorf("after punching, data at %v", ext)
	}
	if st, _ := f.Stat(); st.Size() != size {
		t.Errorf("size %d after Zero", st.Size())
	}

	g := file(t, size, 0, 4096*10, size-4096)
	defer func(p func(int, int64, int64) error) { punch = p }(punch)
	punch = func(int, int64, int64) error { return unix.EOPNOTSUPP }
	before := blocks(t, g)
	wrote, err := Zero(g, 4096, size-8192)
	if err != nil || !wrote {
		t.Fatalf("Zero without punching: wrote %v, %v", wrote, err)
	}
	b := make([]byte, 4096)
	g.ReadAt(b, 4096*10)
	if !bytes.Equal(b, make([]byte, 4096)) {
		t.Errorf("data in the range not zeroed")
	}
	if got := blocks(t, g); got != before {
		t.Errorf("zeros written over holes: %d blocks, %d before", got, before)
	}
}

// TestCopy: a 4 TiB file of two blocks copies as two blocks; a limit
// copies only the start.
func TestCopy(t *testing.T) {
	const size = 4 << 40
	src := file(t, size, 0, 1<<40)
	dst, err := os.Create(filepath.Join(t.TempDir(), "dst"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := Copy(dst, src, 1<<62); err != nil {
		t.Fatal(err)
	}
	st, _ := dst.Stat()
	if st.Size() != size || blocks(t, dst)*512 > 1<<20 {
		t.Errorf("copy: %d bytes, %d blocks", st.Size(), blocks(t, dst))
	}
	b := make([]byte, 4096)
	dst.ReadAt(b, 1<<40)
	if !bytes.Equal(b, bytes.Repeat([]byte("d"), 4096)) {
		t.Errorf("copy: data at 1 TiB differs")
	}

	part, _ := os.Create(filepath.Join(t.TempDir(), "part"))
	defer part.Close()
	if err := Copy(part, src, 100); err != nil {
		t.Fatal(err)
	}
	if st, _ := part.Stat(); st.Size() != 100 {
		t.Errorf("copy of 100 bytes: %d", st.Size())
	}
}

// TestDataFromHole: a range that starts in a hole, or in data and ends
// in it, or holds only data.
func TestDataFromHole(t *testing.T) {
	const mb = 1 << 20
	f := file(t, 4*mb, mb, 2*mb)
	for _, c := range []struct {
		lo, hi int64
		want   []Extent
	}{
		{8192, mb + 100, []Extent{{mb, 100}}},
		{mb + 10, mb + 20, []Extent{{mb + 10, 10}}},
		{mb + 10, 2*mb + 4096, []Extent{{mb + 10, 4096 - 10}, {2 * mb, 4096}}},
		{0, mb, nil},
	} {
		got := Data(int(f.Fd()), c.lo, c.hi)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Data(%d, %d): %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}
