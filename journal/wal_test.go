package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// halt stops the record log's background applier.
func (l *recordLog) halt() {
	select {
	case <-l.stopped:
	default:
		close(l.stop)
		<-l.stopped
	}
}

// crash ends j as a kill -9 would: what the record log holds is not
// applied to Badger, nothing is closed in order.
func (j *Journal) crash() {
	j.wal.halt()
	j.wal.f.Close()
	j.closeHealth()
	j.db.DB.Close() // Badger's own state is as a kill leaves it: its log is in the page cache
	j.packs.close()
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
	j.wal.halt() // nothing reaches Badger before the crash
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
	pending := len(j.wal.pending)
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

// TestRecordLogCutEntry: an entry cut short (a kill in the middle of its
// write, or power lost) is dropped at open, with nothing after it; the
// records before it stay and the log goes on from there.
func TestRecordLogCutEntry(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seqs := appendN(t, j, 20, 10)
	gen := j.wal.gen
	j.crash()
	p := filepath.Join(dir, walName(gen))
	whole, _ := os.ReadFile(p)
	cut := encodeEntry([]walOp{{key: recordKey(999), val: []byte("never acknowledged")}})
	for _, tail := range [][]byte{cut[:len(cut)-3], append([]byte{}, cut[:walHeader]...), []byte{0xff, 0xff}} {
		if err := os.WriteFile(p, append(append([]byte{}, whole...), tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		j, err = Open(dir, Options{})
		if err != nil {
			t.Fatalf("open after a cut entry: %v", err)
		}
		have(t, j, seqs)
		if _, err := j.Record(999); err == nil {
			t.Errorf("a cut entry's record was applied")
		}
		if st, _ := os.Stat(p); st != nil && st.Size() > int64(len(whole)) && j.wal.gen == gen {
			t.Errorf("the cut entry is still in the log (%d bytes, %d before it)", st.Size(), len(whole))
		}
		more := appendN(t, j, 3, 10)
		j.crash()
		j, err = Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		have(t, j, append(seqs, more...))
		seqs = append(seqs, more...)
		gen = j.wal.gen
		j.crash()
		p = filepath.Join(dir, walName(gen))
		whole, _ = os.ReadFile(p)
	}
}

// TestRecordLogRotates: a log past walRotate, fully applied, is
// replaced by the next generation, and everything stays readable.
func TestRecordLogRotates(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := j.wal.gen
	seqs := appendN(t, j, walRotate/(60<<10)+10, 60<<10)
	if err := j.wal.apply(); err != nil {
		t.Fatal(err)
	}
	if j.wal.gen == first {
		t.Fatalf("the log was not replaced after %d bytes", j.wal.end)
	}
	if _, err := os.Stat(filepath.Join(dir, walName(first))); !os.IsNotExist(err) {
		t.Errorf("the replaced log is still there: %v", err)
	}
	more := appendN(t, j, 5, 10)
	j.crash()
	if j, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	have(t, j, append(seqs, more...))
}

// FuzzDecodeEntry: no bytes make decodeEntry panic or read past them,
// and an entry encoded decodes to its operations.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry([]walOp{{key: []byte("k"), val: []byte("v")}, {del: true, key: []byte("d")}}))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, n, ok := decodeEntry(b)
		if !ok {
			return
		}
		if n > int64(len(b)) {
			t.Fatalf("entry of %d bytes in %d", n, len(b))
		}
		again, _, ok := decodeEntry(encodeEntry(ops))
		if !ok || len(again) != len(ops) {
			t.Fatalf("re-encoded entry: %v ops, want %v", len(again), len(ops))
		}
		for i := range ops {
			if ops[i].del != again[i].del || !bytes.Equal(ops[i].key, again[i].key) || !bytes.Equal(ops[i].val, again[i].val) {
				t.Fatalf("op %d differs after a round trip", i)
			}
		}
	})
}

// TestRecordLogRotateFails: when the next generation cannot be made,
// the log goes on in the old one, and what is logged there survives a
// crash: the note of how far the log is applied must not have moved on
// to a generation that does not exist.
func TestRecordLogRotateFails(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.wal.halt() // only the apply below reaches Badger
	first := j.wal.gen
	if _, err := j.BeginTurn("", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	appendIn := func(n, size int) (seqs []uint64) {
		g := j.Enter()
		defer g.Leave()
		for i := 0; i < n; i++ {
			r := &Record{Kind: KindXattr, Path: fmt.Sprintf("f%d", i), XattrName: "user.x", XattrValue: bytes.Repeat([]byte{'v'}, size)}
			if err := j.Append(g, r, nil); err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, r.Seq)
		}
		return seqs
	}
	seqs := appendIn(walRotate/(60<<10)+10, 60<<10)
	refused := false
	openLogFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		openLogFile, refused = os.OpenFile, true // once
		return nil, errors.New("injected: cannot create the next log")
	}
	t.Cleanup(func() { openLogFile = os.OpenFile })
	j.wal.apply() // applies, then fails to replace the log
	if !refused {
		t.Fatalf("the log past walRotate (%d bytes) was not replaced", j.wal.end)
	}
	if j.wal.gen != first {
		t.Fatalf("the log moved to generation %d, which could not be made", j.wal.gen)
	}
	more := appendIn(5, 10) // logged in the old generation, not applied
	j.crash()
	if j, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	have(t, j, append(seqs, more...))
	// With nothing refused, the next apply replaces the log.
	j.wal.halt()
	last := appendIn(20, 10)
	if err := j.wal.apply(); err != nil {
		t.Fatal(err)
	}
	if j.wal.gen == first {
		t.Errorf("the log was not replaced after %d bytes", j.wal.end)
	}
	j.crash()
	if j, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	have(t, j, append(append(seqs, more...), last...))
}
