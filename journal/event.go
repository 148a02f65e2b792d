package journal

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/cowfs/cowfs/journal/wal"
)

// Events the journal keeps beside changes, as KindEvent records, so a
// client reading the record sequence sees them in order with the
// changes and can resume after any of them.
const (
	EventTurnBegin = "turn_begin" // detail: {"id", "anchor"}
	EventTurnEnd   = "turn_end"
	EventStep      = "step" // the record's Step is the step's id; detail: {"name"}, if named
	EventRollback  = "rollback"
	EventUnrevert  = "unrevert"
	// EventTurnPruned: a turn left the window; detail is a prunedEvent.
	EventTurnPruned = "turn_pruned"
)

// prunedEvent is the detail of an EventTurnPruned.
type prunedEvent struct {
	Turn   uint64 `json:"turn"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"` // PruneWindow, PruneMaxSize or PruneNoSpace
}

// notifier wakes those waiting for new records.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

// Changed returns a channel closed when a record is next committed.
func (j *Journal) Changed() <-chan struct{} {
	j.notify.mu.Lock()
	defer j.notify.mu.Unlock()
	if j.notify.ch == nil {
		j.notify.ch = make(chan struct{})
	}
	return j.notify.ch
}

func (j *Journal) wake() {
	j.notify.mu.Lock()
	if j.notify.ch != nil {
		close(j.notify.ch)
		j.notify.ch = nil
	}
	j.notify.mu.Unlock()
}

// appendEvent journals an event. The caller holds the gate.
func (j *Journal) appendEvent(turn uint64, step, name string, detail any) error {
	rec := &Record{Kind: KindEvent, Turn: turn, Step: step, Path: name, Time: time.Now()}
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return err
		}
		rec.Detail = b
	}
	err := j.logged(func() ([]wal.Op, error) {
		rec.Seq = j.nextSeq.Add(1) - 1
		return []wal.Op{{Key: recordKey(rec.Seq), Val: encodeRecord(nil, rec)}}, nil
	})
	if err != nil {
		return fmt.Errorf("journal: record event: %w", err)
	}
	j.wake()
	return nil
}

// AppendEvent journals an event outside any turn (a rollback, an
// unrevert).
func (j *Journal) AppendEvent(name string, detail any) error {
	if err := j.usable(); err != nil {
		return err
	}
	j.gate.RLock()
	defer j.gate.RUnlock()
	return j.appendEvent(0, "", name, detail)
}

// BeginStep marks the start of a step (a tool call) in the open turn:
// changes from now on carry its id. name, if not empty, is what the
// step is (the tool's name), kept in the step's event for people
// reading the turn. It fails with ErrNoTurn if no turn is open.
func (j *Journal) BeginStep(id, name string) (Turn, error) {
	if err := j.usable(); err != nil {
		return Turn{}, err
	}
	j.gate.Lock()
	defer j.gate.Unlock()
	if j.open == nil {
		return Turn{}, ErrNoTurn
	}
	j.step = id
	// A step is its own epoch: the first change to each inode in it
	// journals a pre-image again, so a step's records (its diff, its
	// events) are exactly what it changed — at the cost of what each
	// step destroys, not of the whole file each time.
	j.epoch++
	j.epochSeq = j.nextSeq.Load()
	var detail any
	if name != "" {
		detail = StepDetail{Name: name}
	}
	return *j.open, j.appendEvent(j.open.Num, id, EventStep, detail)
}

// StepDetail is the detail of an EventStep record.
type StepDetail struct {
	Name string `json:"name,omitempty"`
}

// StepOf reads the detail of an EventStep record; a step begun without
// a name, or by a cowfs that kept none, has the zero StepDetail.
func StepOf(r *Record) StepDetail {
	var d StepDetail
	if len(r.Detail) > 0 {
		json.Unmarshal(r.Detail, &d)
	}
	return d
}
