package journal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cowfs/cowfs/sparse"

	"github.com/cowfs/cowfs/test/testenv"
)

// sparseFile makes a file of size bytes whose data is pieces (offset ->
// bytes), the rest holes.
func sparseFile(t *testing.T, size int64, pieces map[int64][]byte) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(size); err != nil {
		testenv.Skip(t, fmt.Sprintf("the test filesystem cannot hold a sparse file of %d bytes: %v", size, err))
	}
	for off, b := range pieces {
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestSparsePreimage: the pre-image of a range that is mostly holes —
// a 4 TiB file with 350 bytes at its start and 70,000 at 1 GiB — stores
// its data only, fits a journal of 64 MiB, and reads back as the data
// at its offsets with the holes listed; nothing of a hole is read, stored
// or passed on.
func TestSparsePreimage(t *testing.T) {
	const size = 4 << 40
	head := bytes.Repeat([]byte("notes\n"), 59)[:350]
	mid := make([]byte, 70000)
	for i := range mid {
		mid[i] = byte(rand.Uint32())
	}
	f := sparseFile(t, size, map[int64][]byte{0: head, 1 << 30: mid})
	dir := t.TempDir()
	j, err := Open(dir, Options{MaxSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	g := j.Enter()
	rec := &Record{Kind: KindData, Path: "notes.txt", Off: 100, Len: size - 100}
	err = j.Append(g, rec, f)
	g.Leave()
	if err != nil {
		t.Fatalf("journal the pre-image of a 4 TiB sparse range: %v", err)
	}
	if rec.Stored > 1<<20 {
		t.Errorf("the pre-image added %d bytes to the journal", rec.Stored)
	}
	seq := rec.Seq
	j.Close()
	if j, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if rec, err = j.Record(seq); err != nil {
		t.Fatal(err)
	}
	if rec.Len != size-100 {
		t.Errorf("the record covers %d bytes, want %d", rec.Len, int64(size-100))
	}
	var holes int64
	for _, h := range rec.Holes {
		holes += h.Len
	}
	var chunks int64
	for _, c := range rec.Chunks {
		chunks += int64(c.Size)
	}
	if chunks+holes != rec.Len || chunks > 1<<20 {
		t.Errorf("%d bytes in chunks and %d in holes (%v) for a range of %d", chunks, holes, rec.Holes, rec.Len)
	}

	// What ReadContent passes is the file's bytes at their offsets,
	// and covers the data the file has in the range.
	var got int64
	err = j.ReadContent(rec, func(off int64, b []byte) error {
		want := make([]byte, len(b))
		f.ReadAt(want, off)
		if !bytes.Equal(b, want) {
			t.Errorf("%d bytes at %d differ from the file's", len(b), off)
		}
		for _, h := range rec.Holes {
			if off < h.Off+h.Len && h.Off < off+int64(len(b)) {
				t.Errorf("bytes [%d, %d) passed inside the hole %v", off, off+int64(len(b)), h)
			}
		}
		got += int64(len(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != chunks {
		t.Errorf("ReadContent passed %d bytes of %d", got, chunks)
	}
	for _, e := range sparse.Data(int(f.Fd()), 100, size) {
		for _, h := range rec.Holes {
			if e.Off < h.Off+h.Len && h.Off < e.End() {
				t.Errorf("the file's data %v is in the record's hole %v", e, h)
			}
		}
	}
}

// TestPreimageWithoutDescriptor: a source that cannot say where its
// holes are is read as data, all of it.
func TestPreimageWithoutDescriptor(t *testing.T) {
	j := TestJournal(t, Options{})
	content := make([]byte, 3<<20) // zeros: a hole, were it a file
	g := j.Enter()
	rec := &Record{Kind: KindData, Path: "z", Off: 0, Len: int64(len(content))}
	err := j.Append(g, rec, bytes.NewReader(content))
	g.Leave()
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Holes) != 0 || rec.Len != int64(len(content)) {
		t.Fatalf("record of a reader: %d bytes, holes %v", rec.Len, rec.Holes)
	}
}

// TestFewerHoles: past the most holes a record may list, the shortest
// gaps between extents are read as data.
func TestFewerHoles(t *testing.T) {
	x := func(off, n int64) sparse.Extent { return sparse.Extent{Off: off, Len: n} }
	ext := []sparse.Extent{x(0, 1), x(10, 1), x(12, 1), x(100, 1), x(103, 1)}
	got := fewerHoles(ext, 3)
	want := []sparse.Extent{x(0, 1), x(10, 3), x(100, 4)}
	if len(got) != len(want) {
		t.Fatalf("fewerHoles: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fewerHoles: %v, want %v", got, want)
		}
	}
}
