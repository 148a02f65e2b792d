package capture

import (
	"io"
	"log/slog"

	"github.com/cowfs/cowfs/journal"
)

// Journal is what capture asks of the journal: to append a record,
// with its pre-image, before the change it describes, and to withdraw
// one whose change did not happen. *journal.Journal is one.
type Journal interface {
	Append(g journal.Gate, rec *journal.Record, src io.ReaderAt) error
	Discard(rec *journal.Record) error
}

var _ Journal = (*journal.Journal)(nil)

// Author labels each record an Op appends with who made it: the FUSE
// layer's caller and whether it is the turn's agent, a rollback's group.
type Author interface {
	Label(rec *journal.Record)
}

// AppendError is a failure to journal a record (no space, the journal
// unusable or closed): the journal's fault, never the object's. Its
// message is the journal's.
type AppendError struct{ Err error }

func (e *AppendError) Error() string { return e.Err.Error() }
func (e *AppendError) Unwrap() error { return e.Err }

// Op is the records of one action — a FUSE request, a rollback step, a
// change a scan found — appended under Gate, which the caller holds
// until the action is done so that the action lands in the same epoch
// as its records. It remembers what it appended and what each record
// marked captured, for Withdraw. An Op is one goroutine's; set its
// exported fields, then use it, and do not copy it once used.
type Op struct {
	Journal Journal
	Gate    journal.Gate
	By      Author       // labels each record; nil: none
	Log     *slog.Logger // says why a record could not be appended or withdrawn; nil: silent

	made []made // records appended, oldest first
	took []took // states taken, each once
	// tookIn holds took while it fits: most Ops take one or two
	// states, and a WRITE's Op would otherwise allocate for its one.
	tookIn [2]took
}

// Record appends rec — with the bytes rec.Off..rec.Off+rec.Len of src
// for journal.KindData — before the action that needs it: a record that
// is no pre-image (a creation, a rename, a removal kept aside, a change
// found outside the mount). The action must not be performed if Record
// fails: fail closed, never unrecorded.
func (o *Op) Record(rec *journal.Record, src io.ReaderAt) error {
	return o.append(rec, src, nil, mark{})
}

// append labels and appends rec; once it is in, m (if any) is what it
// marks captured in s, which the caller then marks.
func (o *Op) append(rec *journal.Record, src io.ReaderAt, s *State, m mark) error {
	if o.By != nil {
		o.By.Label(rec)
	}
	// Invariant 1: once Append returns, the record and its pre-image
	// are in the record log — the kernel's page cache at least, so they
	// survive the daemon being killed — and only then may the caller's
	// action destroy what they describe. A failure leaves nothing
	// marked: the action must not run.
	if err := o.Journal.Append(o.Gate, rec, src); err != nil {
		if o.Log != nil {
			o.Log.Error("cannot journal change; refusing it", "op", rec.Kind, "path", rec.Path, "err", err)
		}
		return &AppendError{err}
	}
	o.made = append(o.made, made{rec: rec, s: s, m: m})
	return nil
}

// Take returns the state of identity id in set for the Op's epoch,
// locked. The caller unlocks it (State.Unlock), once it has journaled
// what it needed.
func (o *Op) Take(set *Set, id uint64) *State {
	s := set.take(o.Gate.Epoch, id)
	s.mu.Lock()
	s.takes++
	if o.took == nil {
		o.took = o.tookIn[:0]
	}
	o.took = tookState(o.took, s)
	return s
}

// Keep forgets what the Op appended and took: its records stand,
// whatever happens next. An Op that serves many actions (a rollback's,
// one per step) keeps after each, so that it holds one action's
// records at a time.
func (o *Op) Keep() {
	clear(o.made)
	clear(o.took)
	o.made, o.took = o.made[:0], o.took[:0]
}
