package journal

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cowfs/cowfs/journal/pack"
)

func TestTurnsAndRecords(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	t1, err := j.BeginTurn("call-1", "msg-1", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.BeginTurn("", "", now); !errors.Is(err, ErrBusy) {
		t.Fatalf("second begin: %v, want ErrBusy", err)
	}
	g := j.Enter()
	if g.Turn != t1.Num {
		t.Fatalf("gate turn %d, want %d", g.Turn, t1.Num)
	}
	content := bytes.Repeat([]byte("pre-image "), 1000)
	rec := &Record{Kind: KindData, Path: "a/b.txt", Off: 0, Len: int64(len(content)), Caller: Caller{Pid: 7, Comm: "sed"}}
	if err := j.Append(g, rec, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	g.Leave()
	if _, err := j.EndTurn(now); err != nil {
		t.Fatal(err)
	}
	if _, err := j.EndTurn(now); !errors.Is(err, ErrNoTurn) {
		t.Fatalf("second end: %v, want ErrNoTurn", err)
	}
	if _, err := j.BeginTurn("call-1", "", now); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("duplicate id: %v", err)
	}
	j.Close()

	// Reopen: the record and its content are there.
	j, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	got, err := j.FindTurn("call-1")
	if err != nil || got.Num != 1 || got.Open() {
		t.Fatalf("FindTurn: %+v %v", got, err)
	}
	var recs []*Record
	var events []string
	j.Scan(got.StartSeq, got.EndSeq, false, func(r *Record) error {
		if r.Kind == KindEvent {
			events = append(events, r.Path)
		} else {
			recs = append(recs, r)
		}
		return nil
	})
	if len(events) != 2 || events[0] != EventTurnBegin || events[1] != EventTurnEnd {
		t.Fatalf("events of the turn: %v", events)
	}
	if len(recs) != 1 || recs[0].Path != "a/b.txt" || recs[0].Caller.Comm != "sed" || recs[0].Turn != 1 {
		t.Fatalf("records after reopen: %+v", recs)
	}
	var buf bytes.Buffer
	if err := j.ReadContent(recs[0], func(off int64, b []byte) error { buf.Write(b); return nil }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), content) {
		t.Fatalf("content differs")
	}
}

func TestOpenTurnSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	j, _ := Open(dir, Options{})
	j.BeginTurn("", "", time.Now())
	j.Close()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if tr, ok := j.OpenTurn(); !ok || tr.Num != 1 {
		t.Fatalf("open turn after reopen: %+v %v", tr, ok)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
}

// A pre-image far larger than a Badger transaction may hold is stored
// in bounded batches and read back exactly.
func TestLargeContent(t *testing.T) {
	j := TestJournal(t, Options{})
	big := make([]byte, 40<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.IntN(16)) // compressible, but not trivially
	}
	g := j.Enter()
	rec := &Record{Kind: KindData, Path: "big", Len: int64(len(big))}
	if err := j.Append(g, rec, bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	g.Leave()
	for i, c := range rec.Chunks {
		if c.Size > pack.ChunkSize || c.Size < pack.MinChunk && i < len(rec.Chunks)-1 {
			t.Fatalf("chunk %d of %d bytes", i, c.Size)
		}
	}
	var got bytes.Buffer
	j.ReadContent(rec, func(off int64, b []byte) error { got.Write(b); return nil })
	if !bytes.Equal(got.Bytes(), big) {
		t.Fatal("content differs")
	}
}

func TestShortSource(t *testing.T) {
	j := TestJournal(t, Options{})
	g := j.Enter()
	defer g.Leave()
	rec := &Record{Kind: KindData, Path: "f", Off: 2, Len: 100}
	if err := j.Append(g, rec, bytes.NewReader([]byte("hello"))); err != nil {
		t.Fatal(err)
	}
	if rec.Len != 3 {
		t.Fatalf("Len %d, want 3", rec.Len)
	}
}

func TestPrune(t *testing.T) {
	j := TestJournal(t, Options{Window: 2})
	var asides []string
	shared := bytes.Repeat([]byte{'s'}, 5000)
	for i := 0; i < 4; i++ {
		j.BeginTurn("", "", time.Now())
		g := j.Enter()
		unique := bytes.Repeat([]byte{byte('a' + i)}, 5000)
		j.Append(g, &Record{Kind: KindData, Path: "u", Len: 5000}, bytes.NewReader(unique))
		j.Append(g, &Record{Kind: KindData, Path: "s", Len: 5000}, bytes.NewReader(shared))
		j.Append(g, &Record{Kind: KindRemove, Path: "d", Aside: string(rune('0' + i))}, nil)
		g.Leave()
		j.EndTurn(time.Now())
		if err := j.Prune(func(n string) error { asides = append(asides, n); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	ts, _ := j.Turns()
	if len(ts) != 2 || ts[0].Num != 3 {
		t.Fatalf("turns after prune: %+v", ts)
	}
	if len(asides) != 2 || asides[0] != "0" || asides[1] != "1" {
		t.Fatalf("asides freed: %v", asides)
	}
	n := 0
	j.Scan(0, 0, false, func(r *Record) error {
		if r.Kind == KindEvent {
			return nil
		}
		n++
		if r.Turn < 3 {
			t.Errorf("record of turn %d survived", r.Turn)
		}
		if r.Kind == KindData {
			if _, err := j.ReadChunk(r.Chunks[0]); err != nil {
				t.Errorf("chunk of kept record: %v", err)
			}
		}
		return nil
	})
	if n != 6 {
		t.Fatalf("%d records kept, want 6", n)
	}
	// The unique chunk of turn 1 is gone.
	first := Chunk{Size: 5000}
	first.Hash = sha(bytes.Repeat([]byte{'a'}, 5000))
	if _, err := j.ReadChunk(first); err == nil {
		t.Fatal("chunk of pruned record still there")
	}
}
