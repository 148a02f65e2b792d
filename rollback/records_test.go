package rollback

import (
	"fmt"
	"testing"

	"github.com/cowfs/cowfs/journal"
)

// TestRecordsReadAhead: records serves steps in any order — newest
// first as a plan runs them, out of order, twice, and a record the
// journal does not hold (its error) — with what Record returns.
func TestRecordsReadAhead(t *testing.T) {
	w := newWS(t)
	var seqs []uint64
	w.turn(func() {
		g := w.enter()
		defer g.Leave()
		for i := 0; i < 3*recordWindow/2; i++ {
			rec := &journal.Record{Kind: journal.KindCreate, Path: fmt.Sprintf("f%d", i), Ino: uint64(i + 1)}
			w.append(g, rec, nil)
			seqs = append(seqs, rec.Seq)
		}
	})
	rs := &records{}
	check := func(seq uint64) {
		t.Helper()
		r, err := rs.get(w.j, seq)
		if err != nil {
			t.Fatalf("record %d: %v", seq, err)
		}
		want, err := w.j.Record(seq)
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq != seq || r.Path != want.Path || r.Ino != want.Ino {
			t.Fatalf("record %d: got %+v, want %+v", seq, r, want)
		}
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		check(seqs[i])
		if i == len(seqs)/2 {
			check(seqs[len(seqs)-1]) // above the window
			check(seqs[i])           // again
		}
	}
	if _, err := rs.get(w.j, seqs[len(seqs)-1]+1000); err == nil {
		t.Fatal("a record the journal does not hold was found")
	}
}
