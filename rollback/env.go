package rollback

import (
	"log/slog"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// Env is what a rollback works with.
type Env struct {
	Journal *journal.Journal
	Tree    *backing.Tree
	Aside   *aside.Area
	RootDev uint64 // the backing root's device, for identities
	// Observer is told of every change to the backing directory, so
	// the mount can correct what it and the kernel have cached. Nil:
	// nobody to tell.
	Observer Observer
	Log      *slog.Logger
	// Writeback, if set, makes the kernel write the pages dirtied
	// through the mount (shared writable mappings) back now. A rollback
	// or unrevert calls it before it takes the gate (the writes need
	// it), so that a write a process made through a mapping before the
	// rollback began reaches the journal as what it is — a change
	// outside any turn, which the plan then sees as a conflict — rather
	// than being written back after the restore, over it. A page
	// dirtied after this call is the mount's to keep off the restored
	// file (Observer.Rewritten).
	Writeback func() error
	// Rescan, if set, looks for changes made outside the mount (package
	// rescan) and journals them through g, the exclusive gate, before a
	// rollback or unrevert plans: so its conflict checks are never
	// stale.
	Rescan func(g journal.Gate) error
	// Refresh, if set, is called when a rollback's steps have run (also
	// a partial one's), with the gate g it holds exclusively: the
	// fingerprints of what the rollback touched are taken from the
	// workspace now, so that its records explain no later change behind
	// the mount (rescan.Scanner.Refresh). A failure is logged: the next
	// scan then explains by the records, as before.
	Refresh func(g journal.Gate) error
	// Unjournaled, if set, is told the paths an unrevert changed, with
	// the identity it left at each (0: none): it journals nothing, so a
	// rescan must take their new state as explained — but only where
	// the path holds what the unrevert left. Called with the gate held
	// exclusively.
	Unjournaled func(left map[string]uint64) error
	// Shed, if set, lets go of the names the kernel caches of the
	// workspace and nothing holds (fs.Mount.Shed). A rollback or
	// unrevert over more than shedRecords records calls it, with the
	// gate held, before it plans: planning holds some 300 bytes a
	// record, and the nodes behind the kernel's cache would sit beside
	// them (20 MB at the default bound), while what the rollback
	// changes must be looked up afresh anyway.
	Shed func()
	// AfterStep, if set, is called after each plan step with the number
	// of steps done: a test hook to act at an exact point of a run.
	AfterStep func(steps int)
}

// Observer learns what a rollback changed behind the mount's back.
// Paths are backing-relative. It is called with the journal's gate held
// exclusively, so it must not wait for FUSE requests (the kernel may be
// holding locks for one that waits for the gate): it updates its own
// state at once and defers talking to the kernel.
//
// An inode with several names (linked) changes under all of them: its
// identity is given, since the mount may know it by another name.
type Observer interface {
	Moved(from, to string, ino uint64, linked bool) // renamed (either may be in the aside area)
	Exchanged(a, b string)                          // RENAME_EXCHANGE
	Changed(path string, ino uint64, linked bool)   // attributes changed in place
	// Rewritten: bytes or the size changed in place. Pages the kernel
	// cached of the file before are stale: one a process dirtied
	// through a shared mapping must not be written back over the
	// restored bytes.
	Rewritten(path string, ino uint64, linked bool)
}

// shedRecords is the size of a rollback, in records, past which Shed is
// called first.
const shedRecords = 10_000

// shedFor calls Shed before planning over the records from <= seq < to.
func (env *Env) shedFor(from, to uint64) {
	if env.Shed != nil && to-from > shedRecords {
		env.Shed()
	}
}
