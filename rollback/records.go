package rollback

import "github.com/cowfs/cowfs/journal"

// recordWindow is how many records a run reads ahead in one scan.
const recordWindow = 512

// records reads the whole records a run's steps undo (the plan holds
// only what planning needs: rec.go). Steps run newest first, so rather
// than a lookup per step — a Badger transaction and a search through
// every table for each — records reads the recordWindow records at and
// below a step's in one reverse scan and serves the next steps from
// them. A step out of that order (a record above the window) is looked
// up alone, so an order the plan did not promise costs no more than
// before.
type records struct {
	window map[uint64]*journal.Record
	lo     uint64 // the window read reaches down to lo
	read   bool
}

func (rs *records) get(j *journal.Journal, seq uint64) (*journal.Record, error) {
	if r, ok := rs.window[seq]; ok {
		delete(rs.window, seq)
		return r, nil
	}
	if rs.read && seq >= rs.lo {
		return j.Record(seq) // out of order, or not in the journal (its error)
	}
	lo := seq - min(seq, recordWindow-1)
	rs.window = make(map[uint64]*journal.Record, recordWindow)
	err := j.Scan(lo, seq+1, true, func(r *journal.Record) error {
		rs.window[r.Seq] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	rs.lo, rs.read = lo, true
	if r, ok := rs.window[seq]; ok {
		delete(rs.window, seq)
		return r, nil
	}
	return j.Record(seq)
}
