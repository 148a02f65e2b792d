package journal

import (
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// settleCase is a journal with turn 1 (kept), turn 2 of n records
// rolled back to before itself, one of them skipped, and a record of
// the rollback's own.
type settleCase struct {
	j       *Journal
	dir     string
	t1, t2  Turn
	skipped uint64
	rb      *Rollback
}

func newSettleCase(t *testing.T, n int) *settleCase {
	t.Helper()
	c := &settleCase{dir: t.TempDir()}
	var err error
	if c.j, err = Open(c.dir, Options{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	turn := func(n int, prefix string) Turn {
		if _, err := c.j.BeginTurn("", "", now); err != nil {
			t.Fatal(err)
		}
		g := c.j.Enter()
		for i := 0; i < n; i++ {
			if err := c.j.Append(g, &Record{Kind: KindCreate, Path: fmt.Sprintf("%s%d", prefix, i), Type: 0o100000}, nil); err != nil {
				t.Fatal(err)
			}
		}
		g.Leave()
		tn, err := c.j.EndTurn(now)
		if err != nil {
			t.Fatal(err)
		}
		return tn
	}
	c.t1 = turn(3, "kept")
	c.t2 = turn(n, "undone")
	c.skipped = c.t2.StartSeq + 2
	g := c.j.Exclusive()
	c.rb = &Rollback{Target: c.t2.Num, From: c.t2.StartSeq, To: c.j.NextSeq(), Skipped: []uint64{c.skipped},
		Reverted: []uint64{c.t2.Num}, Started: now}
	if err := c.j.NewRollback(c.rb, planBytes([]byte("{}"))); err != nil {
		t.Fatal(err)
	}
	own := &Record{Kind: KindRemove, Path: "undone0", Group: c.rb.ID}
	if err := c.j.Append(g, own, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.j.FinishRollback(c.rb, Marker{Turn: c.t2.Num, Rollback: c.rb.ID}); err != nil {
		t.Fatal(err)
	}
	g.Leave()
	return c
}

// check says whether the stack was settled: turn 2, its records and
// the rollback's are gone, the skipped record is kept as it was (a
// change of turn 2, to retry; or, where an older version relabelled it
// before a crash, a change outside a turn), turn 1 and its records are
// untouched.
func (c *settleCase) check(t *testing.T, what string) {
	t.Helper()
	kept, err := c.j.Kept()
	if err != nil {
		t.Fatal(err)
	}
	var live, skipped, other int
	c.j.Scan(0, 0, false, func(r *Record) error {
		switch {
		case r.Kind == KindEvent:
		case r.Turn == c.t1.Num:
			live++
		case r.Seq == c.skipped && r.Group == 0 && (r.Turn == c.t2.Num && kept.Is(r.Turn, r.Group) || r.Turn == 0):
			skipped++
		default:
			other++
		}
		return nil
	})
	if live != 3 || skipped != 1 || other != 0 {
		t.Errorf("%s: %d records of turn 1 (want 3), %d skipped ones kept (want 1), %d others (want 0)", what, live, skipped, other)
	}
	ts, _ := c.j.Turns()
	if len(ts) != 1 || ts[0].Num != c.t1.Num {
		t.Errorf("%s: turns %+v, want turn 1 alone", what, ts)
	}
	if rbs, _ := c.j.Rollbacks(); len(rbs) != 0 {
		t.Errorf("%s: rollbacks %+v, want none", what, rbs)
	}
	if n := countPrefix(t, c.j, prefixPlan); n != 0 {
		t.Errorf("%s: %d plan keys left", what, n)
	}
}

// TestSettleInBatches settles a rollback of a turn bigger than a batch.
func TestSettleInBatches(t *testing.T) {
	c := newSettleCase(t, 2*recordBatch+10)
	defer c.j.Close()
	asides, err := c.j.Settle()
	if err != nil {
		t.Fatal(err)
	}
	if len(asides) != 0 {
		t.Errorf("asides %v", asides)
	}
	c.check(t, "settled")
}

// TestSettleFinishedAtOpen: a settle a crash stopped — the stack marked
// settling, some records gone (or, by an older version, the skipped one
// relabelled) — is finished when the
// journal opens, and meanwhile nothing may roll back or unrevert over
// the half-forgotten turns.
func TestSettleFinishedAtOpen(t *testing.T) {
	for _, stop := range []string{"marked", "relabelled", "half dropped"} {
		t.Run(stop, func(t *testing.T) {
			c := newSettleCase(t, 10)
			err := c.j.db.Update(func(txn *badger.Txn) error {
				c.rb.State = RollbackSettling
				return putRollback(txn, c.rb)
			})
			if err != nil {
				t.Fatal(err)
			}
			if stop != "marked" {
				r, _ := c.j.Record(c.skipped)
				r.Turn = 0
				c.j.db.Update(func(txn *badger.Txn) error { return txn.Set(recordKey(r.Seq), encodeRecord(nil, r)) })
			}
			if stop == "half dropped" {
				var drop []*Record
				c.j.Scan(c.t2.StartSeq, c.t2.StartSeq+5, false, func(r *Record) error {
					if r.Kind != KindEvent && r.Seq != c.skipped {
						drop = append(drop, r)
					}
					return nil
				})
				if err := c.j.dropRecords(drop); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.j.CheckSettled(); err == nil {
				t.Error("CheckSettled passes while a settle is unfinished")
			}
			c.j.Close()
			if c.j, err = Open(c.dir, Options{}); err != nil {
				t.Fatal(err)
			}
			defer c.j.Close()
			c.check(t, "reopened after a settle stopped ("+stop+")")
		})
	}
}
