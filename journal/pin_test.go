package journal

import (
	"sync"
	"testing"
	"time"
)

// TestPinHoldsRecords: records pinned stay until the pin is released —
// a prune that would delete them (and free the aside entries they name)
// waits for it — and Records reads pinned records back by number,
// newest first, passing over numbers it holds no record for.
func TestPinHoldsRecords(t *testing.T) {
	j := TestJournal(t, Options{Window: 1, Reserve: 1 << 20})
	var seqs []uint64
	for turn := 0; turn < 2; turn++ {
		if _, err := j.BeginTurn("", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		g := j.Enter()
		rec := &Record{Kind: KindRemove, Path: "f", Type: 0o100000, Ino: 7, Aside: "kept"}
		if err := j.Append(g, rec, nil); err != nil {
			t.Fatal(err)
		}
		g.Leave()
		seqs = append([]uint64{rec.Seq}, seqs...)
		if _, err := j.EndTurn(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	g, pin := j.Pin()
	if pin.Seq != j.NextSeq() || pin.EpochSeq != pin.Seq {
		t.Errorf("pin at %d (epoch from %d), want both %d: no turn is open", pin.Seq, pin.EpochSeq, j.NextSeq())
	}
	g.Leave()

	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	pruned := make(chan error)
	go func() {
		pruned <- j.Prune(func(string) error { note("aside freed"); return nil })
	}()
	time.Sleep(50 * time.Millisecond) // let the prune start: it must wait
	var got []uint64
	err := j.Records(append([]uint64{pin.Seq + 5}, seqs...), func(r *Record) error {
		got = append(got, r.Seq)
		return nil
	})
	if err != nil || len(got) != 2 || got[0] != seqs[0] || got[1] != seqs[1] {
		t.Errorf("records read back while pinned: %v, %v; want %v", got, err, seqs)
	}
	note("released")
	pin.Release()
	if err := <-pruned; err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "released" {
		t.Errorf("prune and pin: %v, want the pin released first", order)
	}
	if _, err := j.Record(seqs[1]); err == nil {
		t.Errorf("record %d of the turn that left the window is still there after the prune", seqs[1])
	}
}
