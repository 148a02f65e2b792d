package journal

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// crash ends j as a kill -9 would: what the record log holds is not
// applied to Badger, nothing is closed in order.
func (j *Journal) crash() {
	j.wal.Abandon()
	j.closeHealth()
	j.db.DB.Close() // Badger's own state is as a kill leaves it: its log is in the page cache
	j.packs.Close()
	j.progress.Close()
	j.lock.Close()
}

// appendN journals n creations in a turn of their own, with xattr
// values of size bytes.
func appendN(t *testing.T, j *Journal, n, size int) []uint64 {
	t.Helper()
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	g := j.Enter()
	var seqs []uint64
	for i := 0; i < n; i++ {
		r := &Record{Kind: KindXattr, Path: fmt.Sprintf("f%d", i), XattrName: "user.x", XattrValue: bytes.Repeat([]byte{'v'}, size)}
		if err := j.Append(g, r, nil); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, r.Seq)
	}
	g.Leave()
	if _, err := j.EndTurn(time.Now()); err != nil {
		t.Fatal(err)
	}
	return seqs
}

func have(t *testing.T, j *Journal, seqs []uint64) {
	t.Helper()
	for _, s := range seqs {
		if _, err := j.Record(s); err != nil {
			t.Fatalf("record %d: %v", s, err)
		}
	}
}

// TestRecordLogReplay: records a crash kept from reaching Badger are
// there after the next open, from the record log alone; so is a
// record's content, and a discard logged after it.
func TestRecordLogReplay(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.wal.Pause() // nothing reaches Badger before the crash
	seqs := appendN(t, j, 50, 10)
	g := j.Enter()
	content := bytes.Repeat([]byte("pre-image "), 20000)
	data := &Record{Kind: KindData, Path: "big", Len: int64(len(content))}
	if err := j.Append(g, data, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	gone := &Record{Kind: KindCreate, Path: "gone"}
	if err := j.Append(g, gone, nil); err != nil {
		t.Fatal(err)
	}
	if err := j.Discard(gone); err != nil {
		t.Fatal(err)
	}
	g.Leave()
	pending := j.wal.Backlog()
	j.crash()
	if pending == 0 {
		t.Fatal("the log was applied before the crash: the test shows nothing")
	}

	j, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	have(t, j, seqs)
	r, err := j.Record(data.Seq)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := j.ReadContent(r, func(_ int64, b []byte) error { got.Write(b); return nil }); err != nil || !bytes.Equal(got.Bytes(), content) {
		t.Fatalf("content after replay: %d bytes, %v", got.Len(), err)
	}
	if _, err := j.Record(gone.Seq); err == nil {
		t.Errorf("a discarded record is back after replay")
	}
	if next := j.NextSeq(); next <= data.Seq {
		t.Errorf("next sequence %d after replay, want more than %d", next, data.Seq)
	}
}
