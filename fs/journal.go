package fs

import (
	"io"

	"github.com/cowfs/cowfs/journal"
)

// Journal is all the FUSE layer asks of the journal: to enter its gate
// for one change (shared: changes run side by side, boundaries and
// rollbacks wait for them), to append a record with its pre-image
// before the change proceeds, and to withdraw the record of a change
// that did not happen (withdraw.go). Turns, steps, rollbacks and
// everything else the journal keeps are the daemon's business.
// *journal.Journal is one.
type Journal interface {
	Enter() journal.Gate
	Append(g journal.Gate, rec *journal.Record, src io.ReaderAt) error
	Discard(rec *journal.Record) error
}

var _ Journal = (*journal.Journal)(nil)
