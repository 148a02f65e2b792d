package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The cost of journaling one change: a small record (a create, a
// remove) and a 4 KiB pre-image.
func BenchmarkAppendRecord(b *testing.B) {
	j := TestJournal(b, Options{})
	g := j.Enter()
	defer g.Leave()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := j.Append(g, &Record{Kind: KindCreate, Path: "some/dir/file.go", Caller: Caller{Comm: "tar"}}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendData4K(b *testing.B) {
	j := TestJournal(b, Options{})
	g := j.Enter()
	defer g.Leave()
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		data[i%len(data)]++ // defeat deduplication
		if err := j.Append(g, &Record{Kind: KindData, Path: "f", Len: int64(len(data))}, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendData4KFile is BenchmarkAppendData4K from a file, whose
// descriptor the journal asks where its holes are (it has none).
func BenchmarkAppendData4KFile(b *testing.B) {
	j := TestJournal(b, Options{})
	g := j.Enter()
	defer g.Leave()
	f, err := os.Create(filepath.Join(b.TempDir(), "f"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		data[i%len(data)]++ // defeat deduplication
		f.WriteAt(data, 0)
		if err := j.Append(g, &Record{Kind: KindData, Path: "f", Len: int64(len(data))}, f); err != nil {
			b.Fatal(err)
		}
	}
}
