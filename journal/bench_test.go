package journal

import (
	"bytes"
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
