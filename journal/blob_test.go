package journal

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// TestLargePlan stores a plan past Badger's largest value (16 MiB) and
// a skipped list of 150,000 records, as a rollback of a 150,000-record
// turn has, and reads both back, also after reopening.
func TestLargePlan(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// JSON-like text that compresses as plans do, but not to nothing.
	rng := rand.New(rand.NewPCG(1, 2))
	var plan bytes.Buffer
	for plan.Len() < 24<<20 {
		plan.WriteString(`{"seq":`)
		plan.WriteString(string(rune('0' + rng.IntN(10))))
		plan.WriteString(`,"op":"data","path":"d004/e99/f0`)
		for i := 0; i < 6; i++ {
			plan.WriteByte(byte('0' + rng.IntN(10)))
		}
		plan.WriteString(`.txt"},`)
	}
	skipped := make([]uint64, 150_000)
	for i := range skipped {
		skipped[i] = uint64(1_000_000 + 3*i)
	}
	r := &Rollback{Target: 1, From: 1, To: 2, Skipped: skipped, Started: time.Now()}
	g := j.Exclusive()
	err = j.NewRollback(r, planBytes(plan.Bytes()))
	g.Leave()
	if err != nil {
		t.Fatalf("store a 24 MiB plan: %v", err)
	}
	check := func(j *Journal, when string) {
		got, err := j.RollbackPlan(r.ID)
		if err != nil || !bytes.Equal(got, plan.Bytes()) {
			t.Fatalf("%s: plan read back: %d bytes, %v; want %d bytes", when, len(got), err, plan.Len())
		}
		rbs, err := j.Rollbacks()
		if err != nil || len(rbs) != 1 || !slices.Equal(rbs[0].Skipped, skipped) {
			t.Fatalf("%s: skipped read back: %v, %d rollbacks", when, err, len(rbs))
		}
	}
	check(j, "stored")
	// A progress save does not rewrite either; a new plan replaces the
	// old one's parts.
	r.Next = 7
	if err := j.SaveRollback(r, nil); err != nil {
		t.Fatal(err)
	}
	check(j, "after a progress save")
	if err := j.SaveRollback(r, planBytes([]byte(`{"steps":[]}`))); err != nil {
		t.Fatal(err)
	}
	plan.Reset()
	plan.WriteString(`{"steps":[]}`)
	check(j, "after a new plan")
	if n := countPrefix(t, j, prefixPlan); n != 2 {
		t.Errorf("%d plan keys after the plan was replaced, want 2 (one part of each blob)", n)
	}
	j.Close()
	j, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	check(j, "reopened")
}

// TestFormat2Rollback opens a journal holding a rollback as format 2
// stored it — its plan whole under 'p' id, its skipped list in its
// record — and finds both; the journal becomes the current format.
func TestFormat2Rollback(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]any{"id": 4, "target": 2, "state": "done", "from": 10, "to": 20, "skipped": []uint64{12, 15},
		"reverted": []uint64{2}, "started": time.Now()}
	b, _ := json.Marshal(old)
	err = j.db.Update(func(txn *badger.Txn) error {
		m, _ := json.Marshal(meta{Format: 2})
		txn.Set(metaKey, m)
		txn.Set(rollbackKey(4), b)
		return txn.Set(planKey(4), []byte(`{"steps":"old"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if j, err = Open(dir, Options{}); err != nil {
		t.Fatalf("open a format-2 journal: %v", err)
	}
	defer j.Close()
	plan, err := j.RollbackPlan(4)
	if err != nil || string(plan) != `{"steps":"old"}` {
		t.Errorf("format-2 plan: %q, %v", plan, err)
	}
	rbs, err := j.Rollbacks()
	if err != nil || len(rbs) != 1 || !slices.Equal(rbs[0].Skipped, []uint64{12, 15}) {
		t.Fatalf("format-2 rollback: %+v, %v", rbs, err)
	}
	// Saved again, it moves to parts and the old value goes.
	rb := rbs[0]
	if err := j.SaveRollback(&rb, planBytes(plan)); err != nil {
		t.Fatal(err)
	}
	if got, err := j.RollbackPlan(4); err != nil || string(got) != string(plan) {
		t.Errorf("plan after saving in the current format: %q, %v", got, err)
	}
	if err := j.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(planKey(4))
		return err
	}); err != badger.ErrKeyNotFound {
		t.Errorf("the format-2 plan is still there after the plan moved to parts: %v", err)
	}
	var m meta
	j.db.View(func(txn *badger.Txn) error { _, err := getJSON(txn, metaKey, &m); return err })
	if m.Format != FormatVersion {
		t.Errorf("format after opening: %d, want %d", m.Format, FormatVersion)
	}
}

// TestPlanPartsSwept: parts of a version no rollback names — a crash
// between storing them and the record — are deleted when the journal
// opens; the named ones stay.
func TestPlanPartsSwept(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Rollback{Target: 1, From: 1, To: 2, Started: time.Now()}
	if err := j.NewRollback(r, planBytes([]byte("plan"))); err != nil {
		t.Fatal(err)
	}
	// A crash after the parts of version 2 (and those of a rollback
	// never recorded) were stored.
	if _, err := j.putBlob(r.ID, blobPlan, r.PlanBlob.Version+1, []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if _, err := j.putBlob(r.ID+1, blobPlan, 1, []byte("never named")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if j, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if n := countPrefix(t, j, prefixPlan); n != 2 {
		t.Errorf("%d plan keys after reopening, want the 2 the rollback names", n)
	}
	if got, err := j.RollbackPlan(r.ID); err != nil || string(got) != "plan" {
		t.Errorf("plan: %q, %v", got, err)
	}
}

func countPrefix(t *testing.T, j *Journal, p byte) int {
	t.Helper()
	n := 0
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{p}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
