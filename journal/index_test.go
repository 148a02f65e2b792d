package journal

import (
	"bytes"
	"testing"
	"time"
)

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
