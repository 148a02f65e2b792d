package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Turn is one user prompt and the agent run that answers it.
type Turn struct {
	Num    uint64    `json:"num"`
	ID     string    `json:"id,omitempty"`     // the harness's own id
	Anchor string    `json:"anchor,omitempty"` // e.g. the user message id
	Began  time.Time `json:"began"`
	Ended  time.Time `json:"ended,omitzero"`

	// The turn owns the records with StartSeq <= seq < EndSeq.
	// EndSeq is 0 while the turn is open.
	StartSeq uint64 `json:"start_seq"`
	EndSeq   uint64 `json:"end_seq,omitempty"`

	// RevertedBy is the rollback that reverted the turn. A reverted
	// turn is forgotten when the next turn begins, unless the rollback
	// is undone first.
	RevertedBy uint64 `json:"reverted_by,omitempty"`

	// Agent names the processes that are the turn's agent; nil: every
	// process is.
	Agent *Scope `json:"agent,omitempty"`
}

// Open reports whether the turn has not ended.
func (t Turn) Open() bool { return t.EndSeq == 0 }

// Gate is held by a change from before its record is appended until
// its operation has reached the backing directory. It fixes the turn
// the change belongs to.
type Gate struct {
	j     *Journal
	Turn  uint64 // 0: outside a turn
	Step  string // the turn's current step
	Epoch uint64 // changes in one epoch share one pre-image per inode
	// Agent is the open turn's scope: a change by a process outside it
	// is not the turn's (Record.NotAgent). Nil: every process is the
	// agent, and outside a turn nobody is asked.
	Agent     *Scope
	exclusive bool
}

// Enter holds the gate for one change.
func (j *Journal) Enter() Gate {
	j.gate.RLock()
	g := Gate{j: j, Epoch: j.epoch}
	if j.open != nil {
		g.Turn, g.Step, g.Agent = j.open.Num, j.step, j.open.Agent
	}
	return g
}

// Leave releases the gate.
func (g Gate) Leave() {
	if g.exclusive {
		g.j.gate.Unlock()
	} else {
		g.j.gate.RUnlock()
	}
}

// Exclusive waits for changes in flight to finish and keeps new ones
// out until the returned gate is left. Rollbacks run under it, and
// journal their own changes through it (outside any turn).
func (j *Journal) Exclusive() Gate {
	j.gate.Lock()
	return Gate{j: j, Epoch: j.epoch, exclusive: true}
}

// InTurn returns g labelled with the open turn and step, if a turn is
// open: records appended through it belong to that turn. For a holder
// of the exclusive gate.
func (g Gate) InTurn() Gate {
	if g.j.open != nil {
		g.Turn, g.Step, g.Agent = g.j.open.Num, g.j.step, g.j.open.Agent
	}
	return g
}

// OpenTurn returns the open turn, if any, for a holder of the gate.
func (g Gate) OpenTurn() (Turn, bool) {
	if g.j.open == nil {
		return Turn{}, false
	}
	return *g.j.open, true
}

// OpenTurn returns the open turn, if any.
func (j *Journal) OpenTurn() (Turn, bool) {
	j.gate.RLock()
	defer j.gate.RUnlock()
	if j.open == nil {
		return Turn{}, false
	}
	return *j.open, true
}

// BeginTurn opens a new turn that belongs to every process. It fails
// with ErrBusy if one is open, with ErrDuplicateID if a turn in the
// window already has id, and with ErrInvalid if id reads as a number
// (turnref.go).
func (j *Journal) BeginTurn(id, anchor string, now time.Time) (Turn, error) {
	return j.BeginAgentTurn(id, anchor, nil, now)
}

// BeginAgentTurn is BeginTurn for a turn whose agent is the processes
// agent names (nil or empty: every process).
func (j *Journal) BeginAgentTurn(id, anchor string, agent *Scope, now time.Time) (Turn, error) {
	if agent.Empty() {
		agent = nil
	}
	if err := j.usable(); err != nil {
		return Turn{}, err
	}
	if err := CheckTurnID(id); err != nil {
		return Turn{}, err
	}
	j.gate.Lock()
	defer j.gate.Unlock()
	if j.open != nil {
		return Turn{}, fmt.Errorf("%w: turn %d", ErrBusy, j.open.Num)
	}
	if id != "" {
		if _, err := j.findTurn(id); err == nil {
			return Turn{}, fmt.Errorf("%w: %q", ErrDuplicateID, id)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	t := Turn{Num: j.nextTurn, ID: id, Anchor: anchor, Began: now.UTC(), StartSeq: j.nextSeq.Load(), Agent: agent}
	err := j.db.Update(func(txn *badger.Txn) error {
		var c counters
		if _, err := getJSON(txn, countersKey, &c); err != nil {
			return err
		}
		c.NextTurn = t.Num + 1
		if err := setJSON(txn, countersKey, c); err != nil {
			return err
		}
		return setJSON(txn, turnKey(t.Num), t)
	})
	if err != nil {
		return Turn{}, fmt.Errorf("journal: save turn %d: %w", t.Num, err)
	}
	j.nextTurn++
	j.open = &t
	j.step = ""
	j.epoch++
	j.epochSeq = j.nextSeq.Load()
	return t, j.appendEvent(t.Num, "", EventTurnBegin, map[string]string{"id": id, "anchor": anchor})
}

// EndTurn closes the open turn.
func (j *Journal) EndTurn(now time.Time) (Turn, error) {
	if err := j.usable(); err != nil {
		return Turn{}, err
	}
	j.gate.Lock()
	defer j.gate.Unlock()
	if j.open == nil {
		return Turn{}, ErrNoTurn
	}
	t := *j.open
	if err := j.appendEvent(t.Num, j.step, EventTurnEnd, nil); err != nil {
		return Turn{}, err
	}
	t.Ended = now.UTC()
	t.EndSeq = j.nextSeq.Load()
	if err := j.putTurn(t); err != nil {
		return Turn{}, err
	}
	j.open = nil
	j.step = ""
	j.epoch++
	j.epochSeq = j.nextSeq.Load()
	return t, nil
}

func (j *Journal) putTurn(t Turn) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := j.db.Update(func(txn *badger.Txn) error { return txn.Set(turnKey(t.Num), b) }); err != nil {
		return fmt.Errorf("journal: save turn %d: %w", t.Num, err)
	}
	return nil
}

func getTurn(txn *badger.Txn, n uint64) (Turn, error) {
	var t Turn
	item, err := txn.Get(turnKey(n))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return t, fmt.Errorf("%w: %d", ErrTurnNotFound, n)
	}
	if err != nil {
		return t, fmt.Errorf("journal: read turn %d: %w", n, err)
	}
	err = item.Value(func(v []byte) error { return json.Unmarshal(v, &t) })
	if err != nil {
		return t, fmt.Errorf("%w: turn %d: %v", ErrCorrupt, n, err)
	}
	return t, nil
}

// Turns returns the turns in the window, oldest first.
func (j *Journal) Turns() ([]Turn, error) {
	var ts []Turn
	err := j.db.View(func(txn *badger.Txn) (err error) {
		ts, err = turnsIn(txn)
		return err
	})
	return ts, err
}

func turnsIn(txn *badger.Txn) ([]Turn, error) {
	var ts []Turn
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixTurn}})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var t Turn
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &t) }); err != nil {
			return nil, fmt.Errorf("%w: turn %d: %v", ErrCorrupt, keyNum(it.Item().Key()), err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// FindTurn returns the turn named by ref: its number, or the harness's
// id (ParseTurnRef says which). It fails with ErrTurnNotFound if no
// turn in the window matches, and with ErrInvalid if ref reads as a
// number that is no turn number.
func (j *Journal) FindTurn(ref string) (Turn, error) {
	return j.findTurn(ref)
}

func (j *Journal) findTurn(ref string) (Turn, error) {
	n, byNumber, err := ParseTurnRef(ref)
	if err != nil {
		return Turn{}, err
	}
	if byNumber {
		var t Turn
		err := j.db.View(func(txn *badger.Txn) error {
			var err error
			t, err = getTurn(txn, n)
			return err
		})
		return t, err
	}
	ts, err := j.Turns()
	if err != nil {
		return Turn{}, err
	}
	for _, t := range ts {
		if t.ID == ref && ref != "" {
			return t, nil
		}
	}
	return Turn{}, fmt.Errorf("%w: %q", ErrTurnNotFound, ref)
}

// NextSeq is the sequence number the next record will get.
func (j *Journal) NextSeq() uint64 { return j.nextSeq.Load() }
