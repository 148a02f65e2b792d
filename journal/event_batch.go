package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cowfs/cowfs/journal/wal"
)

// eventBatch is how many events AppendEvents writes to the record log
// in one entry.
const eventBatch = 2048

// AppendEvents journals one event named name per detail, outside any
// turn, in order and with consecutive sequence numbers: the per-path
// events of a rollback, thousands for a large one. It holds the gate
// exclusively, so no change is journaled between them. They go through
// the record log like every record (package wal), eventBatch to an entry: a
// write(2) each, with Badger's work left to the log's applier instead
// of a transaction committed, and waited for, per megabyte of events
// (which made large rollbacks wait before they answered). Entries
// are logged in sequence order, so a follower never sees a later event
// before an earlier one. What waits for Badger stays bounded: past
// four applier batches pending, the log is applied before more events
// are logged. Events are what a harness reads, not what a rollback
// needs: on an error the ones logged stay.
func (j *Journal) AppendEvents(name string, details []any) error {
	if err := j.usable(); err != nil {
		return err
	}
	j.gate.Lock()
	defer j.gate.Unlock()
	now := time.Now()
	for len(details) > 0 {
		batch := details[:min(len(details), eventBatch)]
		details = details[len(batch):]
		vals := make([][]byte, len(batch))
		for i, d := range batch {
			b, err := json.Marshal(d)
			if err != nil {
				return err
			}
			vals[i] = b
		}
		err := j.logged(func() ([]wal.Op, error) {
			ops := make([]wal.Op, len(vals))
			for i, b := range vals {
				rec := &Record{Kind: KindEvent, Path: name, Time: now, Detail: b}
				rec.Seq = j.nextSeq.Add(1) - 1
				ops[i] = wal.Op{Key: recordKey(rec.Seq), Val: encodeRecord(nil, rec)}
			}
			return ops, nil
		})
		if err != nil {
			return fmt.Errorf("journal: record events: %w", err)
		}
		j.wake()
		if j.wal.Backlog() > 4*wal.ApplyOps {
			if err := j.wal.Apply(); err != nil {
				return fmt.Errorf("journal: record events: %w", err)
			}
			j.trimMapped() // the tables a burst of events makes stay mapped, dirty, until trimmed
		}
	}
	return nil
}
