package fs

import (
	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
)

// Journal is all the FUSE layer asks of the journal: to enter its gate
// for one change (shared: changes run side by side, boundaries and
// rollbacks wait for them), and what package capture asks — to append
// a record with its pre-image before the change proceeds, and to
// withdraw the record of a change that did not happen (withdraw.go).
// Turns, steps, rollbacks and everything else the journal keeps are
// the daemon's business. *journal.Journal is one.
type Journal interface {
	Enter() journal.Gate
	capture.Journal
}

var _ Journal = (*journal.Journal)(nil)
