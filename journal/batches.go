package journal

import "errors"

// recordBatch is how many records a pass that deletes or rewrites
// records holds at once (prune, settle, unrevert): a turn of 150,000
// records is worked through 4,096 at a time, in bounded memory.
const recordBatch = 4096

var errBatchFull = errors.New("batch full")

// scanBatches calls fn with the records from <= seq < to (to == 0: no
// bound) that keep accepts, in sequence order, at most recordBatch at
// a time. fn may delete or rewrite the records it is given: each batch
// is read afresh after the one before.
func (j *Journal) scanBatches(from, to uint64, keep func(*Record) bool, fn func([]*Record) error) error {
	for {
		var batch []*Record
		next := uint64(0)
		err := j.Scan(from, to, false, func(r *Record) error {
			next = r.Seq + 1
			if keep(r) {
				batch = append(batch, r)
				if len(batch) == recordBatch {
					return errBatchFull
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, errBatchFull) {
			return err
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
		}
		if !errors.Is(err, errBatchFull) {
			return nil
		}
		from = next
	}
}
