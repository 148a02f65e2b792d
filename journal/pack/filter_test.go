package pack

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

func testHash(i int) [32]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	return sha256.Sum256(b[:])
}

// Every chunk added is a "maybe" however far the filter grew, and few
// chunks never added are.
func TestChunkFilter(t *testing.T) {
	f := NewFilter()
	const n = 5 * bloomMinKeys
	for i := range n {
		f.Add(testHash(i))
	}
	if layers := len(*f.layers.Load()); layers < 3 {
		t.Errorf("%d layers for %d chunks, from %d", layers, n, bloomMinKeys)
	}
	for i := range n {
		if !f.MayHold(testHash(i)) {
			t.Fatalf("chunk %d added but not held", i)
		}
	}
	var wrong int
	for i := n; i < 2*n; i++ {
		if f.MayHold(testHash(i)) {
			wrong++
		}
	}
	if rate := float64(wrong) / n; rate > 0.03 {
		t.Errorf("%.1f%% false maybes", 100*rate)
	}
}
