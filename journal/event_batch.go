package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// eventBatchBytes caps the encoded events one transaction of
// AppendEvents holds (well under Badger's transaction limit).
const eventBatchBytes = 1 << 20

// AppendEvents journals one event named name per detail, outside any
// turn, in order and with consecutive sequence numbers: the per-path
// events of a rollback, thousands for a large one. It holds the gate
// exclusively, so no change is journaled between them, and commits
// them in as few transactions as fit, each committed before the next
// takes sequence numbers, so a follower never sees a later event
// before an earlier one. Events are what a harness reads, not what a
// rollback needs: on an error the ones committed stay.
func (j *Journal) AppendEvents(name string, details []any) error {
	if err := j.usable(); err != nil {
		return err
	}
	j.gate.Lock()
	defer j.gate.Unlock()
	now := time.Now()
	txn := j.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	pending := 0
	commit := func() error {
		if pending == 0 {
			return nil
		}
		if err := txn.Commit(); err != nil {
			return fmt.Errorf("journal: record events: %w", err)
		}
		j.wake()
		j.trimMapped() // the tables a burst of events makes stay mapped, dirty, until trimmed
		txn, pending = j.db.NewTransaction(true), 0
		return nil
	}
	for _, d := range details {
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		rec := &Record{Kind: KindEvent, Path: name, Time: now, Detail: b}
		rec.Seq = j.nextSeq.Add(1) - 1
		val := encodeRecord(nil, rec)
		err = txn.Set(recordKey(rec.Seq), val)
		if errors.Is(err, badger.ErrTxnTooBig) {
			if err = commit(); err == nil {
				err = txn.Set(recordKey(rec.Seq), val)
			}
		}
		if err != nil {
			return fmt.Errorf("journal: record events: %w", err)
		}
		if pending += len(val); pending >= eventBatchBytes {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	return commit()
}
