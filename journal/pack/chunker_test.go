package pack

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// randomBytes returns n bytes that do not compress, the same for a seed.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n]
}

// Cuts depend on the content only: the same bytes are cut the same way
// wherever they start, so an insertion changes the chunks near it only.
func TestCutByContent(t *testing.T) {
	b := randomBytes(5, 8<<20)
	chunks := func(b []byte) map[[32]byte]bool {
		m := map[[32]byte]bool{}
		for len(b) > 0 {
			n := Cut(b)
			if n > ChunkSize || n < MinChunk && n != len(b) {
				t.Fatalf("chunk of %d bytes", n)
			}
			m[Hash(b[:n])] = true
			b = b[n:]
		}
		return m
	}
	a := chunks(b)
	shifted := chunks(append([]byte("a few bytes more"), b...))
	shared := 0
	for h := range shifted {
		if a[h] {
			shared++
		}
	}
	if shared < len(a)-2 {
		t.Fatalf("%d of %d chunks shared after an insertion", shared, len(a))
	}
	if n := len(a); n < 8 || n > 8<<20/MinChunk {
		t.Fatalf("%d chunks for 8 MiB", n)
	}
	// Content without any cut point is cut at ChunkSize.
	if n := Cut(bytes.Repeat([]byte{0}, 3<<20)); n != ChunkSize {
		t.Fatalf("zeros cut at %d", n)
	}
}

func BenchmarkCut(b *testing.B) {
	data := randomBytes(5, 64<<20)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		for d := data; len(d) > 0; d = d[Cut(d):] {
		}
	}
}
