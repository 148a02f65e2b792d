package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"
)

func testHash(i int) [32]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	return sha256.Sum256(b[:])
}

// Every chunk added is a "maybe" however far the filter grew, and few
// chunks never added are.
func TestChunkFilter(t *testing.T) {
	f := newChunkFilter()
	const n = 5 * bloomMinKeys
	for i := range n {
		f.add(testHash(i))
	}
	if layers := len(*f.layers.Load()); layers < 3 {
		t.Errorf("%d layers for %d chunks, from %d", layers, n, bloomMinKeys)
	}
	for i := range n {
		if !f.mayHold(testHash(i)) {
			t.Fatalf("chunk %d added but not held", i)
		}
	}
	var wrong int
	for i := n; i < 2*n; i++ {
		if f.mayHold(testHash(i)) {
			wrong++
		}
	}
	if rate := float64(wrong) / n; rate > 0.03 {
		t.Errorf("%.1f%% false maybes", 100*rate)
	}
}

// Content stored before the journal was closed is not stored again
// after it is reopened: the filter is filled from the index at open.
func TestDedupAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	same := randomBytes(3, 3<<20)
	store := func() int64 {
		j, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if _, err := j.BeginTurn("", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		g := j.Enter()
		rec := &Record{Kind: KindData, Path: "a", Len: int64(len(same))}
		if err := j.Append(g, rec, bytes.NewReader(same)); err != nil {
			t.Fatal(err)
		}
		g.Leave()
		if _, err := j.EndTurn(time.Now()); err != nil {
			t.Fatal(err)
		}
		return rec.Stored
	}
	if first := store(); first < int64(len(same)) {
		t.Fatalf("first copy stored %d bytes of %d", first, len(same))
	}
	if again := store(); again > 4096 {
		t.Fatalf("the same content stored %d new bytes after a reopen", again)
	}
}
