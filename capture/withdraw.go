package capture

import (
	"fmt"
	"slices"

	"github.com/cowfs/cowfs/journal"
)

// made is a record an Op appended, and what it marked captured in s
// (nil: nothing).
type made struct {
	rec *journal.Record
	s   *State
	m   mark
}

// mark is what one record marked captured in its state.
type mark struct {
	what   uint8 // markAttr, markData, markXattr; 0: nothing
	lo, hi int64 // markData: the bytes
	name   string
}

const (
	markAttr = 1 + iota
	markData
	markXattr
)

// unmark forgets m (s locked).
func (s *State) unmark(m mark) {
	switch m.what {
	case markAttr:
		s.attr = false
	case markData:
		s.saved.Remove(m.lo, m.hi)
	case markXattr:
		delete(s.xattrs, m.name)
	}
}

// took is a state an Op took, and the state's count of takes when the
// Op last took it.
type took struct {
	s  *State
	at uint64
}

// tookState returns ts with s's latest take, which the caller has just
// counted (s locked).
func tookState(ts []took, s *State) []took {
	for i := range ts {
		if t := &ts[i]; t.s == s {
			if t.at == s.takes-1 { // no other Op took s in between
				t.at = s.takes
			}
			return ts
		}
	}
	return append(ts, took{s: s, at: s.takes})
}

// alone reports whether no other Op took s since this one last did (s
// locked by the caller): then nothing else can rely on what this Op
// marked in it.
func (o *Op) alone(s *State) bool {
	for _, t := range o.took {
		if t.s == s {
			return t.at == s.takes
		}
	}
	return false
}

// Withdraw withdraws every record the Op appended, newest first, each
// with what it marked captured, as far as no other Op relied on it
// since (it took the same state and may have found the mark, and
// journaled nothing). Call it when the action did nothing: the records
// describe a change that never happened. A record that cannot be
// discarded is logged and left: harmless (see the package doc).
func (o *Op) Withdraw() {
	for i := len(o.made) - 1; i >= 0; i-- {
		m := o.made[i]
		if err := o.withdraw(m); err != nil && o.Log != nil {
			o.Log.Warn("cannot withdraw the record of a failed operation", "seq", m.rec.Seq, "path", m.rec.Path, "err", err)
		}
	}
	clear(o.made)
	o.made = o.made[:0]
}

// Discard withdraws rec, which the Op appended for a step that then did
// nothing, as Withdraw would; the Op's other records stay. Only a
// record the Op holds (appended since it last kept) can be withdrawn.
func (o *Op) Discard(rec *journal.Record) error {
	for i := len(o.made) - 1; i >= 0; i-- {
		if m := o.made[i]; m.rec == rec {
			o.made = slices.Delete(o.made, i, i+1)
			return o.withdraw(m)
		}
	}
	// Kept (Keep), or never the Op's: what it marked, if anything, is
	// not known here, and a mark left without its record would skip a
	// pre-image. A record left of a change that did not happen is
	// harmless.
	return fmt.Errorf("capture: record %d is not one this op holds", rec.Seq)
}

// withdraw forgets what m marked and discards its record, unless
// another Op relied on the mark since.
func (o *Op) withdraw(m made) error {
	if m.s != nil {
		m.s.mu.Lock()
		alone := o.alone(m.s)
		if alone {
			m.s.unmark(m.m)
		}
		m.s.mu.Unlock()
		if !alone {
			return nil
		}
	}
	return o.Journal.Discard(m.rec)
}
