package journal

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cowfs/cowfs/journal/wal"
)

// AppendEvents writes every event, in order, with consecutive sequence
// numbers, across several entries of the record log, and leaves no more
// of them waiting for Badger than its bound.
func TestAppendEvents(t *testing.T) {
	j := TestJournal(t, Options{})
	type detail struct{ Path string }
	const n = 20000 // about 2 MiB encoded: ten entries
	ds := make([]any, n)
	for i := range ds {
		ds[i] = detail{fmt.Sprintf("dir/file-%06d", i)}
	}
	first := j.NextSeq()
	if err := j.AppendEvents("rollback_path", ds); err != nil {
		t.Fatal(err)
	}
	if got := j.NextSeq() - first; got != n {
		t.Fatalf("%d sequence numbers taken, want %d", got, n)
	}
	if b := j.wal.Backlog(); b > 4*wal.ApplyOps+eventBatch {
		t.Fatalf("%d operations wait for Badger", b)
	}
	i := 0
	err := j.Scan(first, 0, false, func(r *Record) error {
		var d detail
		json.Unmarshal(r.Detail, &d)
		if r.Seq != first+uint64(i) || r.Kind != KindEvent || r.Path != "rollback_path" || r.Turn != 0 ||
			d.Path != fmt.Sprintf("dir/file-%06d", i) {
			return fmt.Errorf("event %d: seq %d kind %v name %q turn %d detail %q", i, r.Seq, r.Kind, r.Path, r.Turn, r.Detail)
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("read %d events back, want %d", i, n)
	}
}
