package rollback

import (
	"github.com/cowfs/cowfs/journal"
	"golang.org/x/sys/unix"
)

// Origins is past run forwards: fed the records of a run oldest first,
// it says for a path as the run left it where the object now there was
// when the run began — the path a diff reads its old version at. It
// follows renames of the path and of every directory above it, so a
// file renamed, moved with its parent or grand-parent, or exchanged
// with its directory, is found at its first name; and, as a run's
// changes (journal.Changes) keep a removed file's path moving with its
// directory, so is a removed one.
//
// Only renames move names: a path removed and made again is the same
// path, and a path a rename vacated holds nothing that was there when
// the run began.
type Origins struct {
	p past
}

// Add moves the origins forward over r, the record after those added
// before.
func (o *Origins) Add(r *journal.Record) {
	if r.Kind != journal.KindRename {
		return
	}
	from, to := r.Path, r.Path2
	if r.Flags&unix.RENAME_EXCHANGE != 0 {
		a, b := o.p.lookup(from), o.p.lookup(to)
		subA, subB := o.p.take(from), o.p.take(to)
		o.p.put(to, subA)
		o.p.put(from, subB)
		o.p.set(from, b)
		o.p.set(to, a)
		return
	}
	moved := o.p.lookup(from)
	sub := o.p.take(from)
	o.p.clear(to) // what it replaced left the namespace
	o.p.put(to, sub)
	o.p.set(to, moved)
	o.p.set(from, entry{absent: true})
}

// Of returns the path that what is at path had when the run began, and
// false if it has none: a rename vacated path (or a directory above
// it), so what is there now was made there since.
func (o *Origins) Of(path string) (string, bool) {
	e := o.p.lookup(path)
	if e.absent || e.gone {
		return "", false
	}
	return e.loc, true
}
