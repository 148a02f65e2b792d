// Package capture journals what a change is about to destroy, before
// the change: its pre-image. It is the one way records reach the
// journal from the FUSE layer (package fs), from a rollback, whose undo
// log makes it undoable (package rollback), and from a scan, which
// journals changes made outside the mount (package rescan). It reads
// the backing directory through descriptors its callers opened; it
// knows nothing of FUSE, plans or fingerprints.
//
// # Once per epoch
//
// An epoch is a turn, each of its steps, or the time between two turns
// (journal.Gate.Epoch); a rollback's run is one of its own. Within one,
// a Set holds what has been captured of each identity (an inode, as
// journal.InodeID numbers it), and a pre-image is journaled at most
// once:
//
//	attributes             at the first touch (Op.Attr), with the size then
//	a directory's times    before its first entry change (Op.Dirent)
//	bytes                  each byte of [0, size at the first touch) once;
//	                       missing ranges found and merged in Ranges (Op.Data)
//	extended attributes    each name's old value, or its absence, once (Op.Xattr)
//	an identity created    nothing more (State.SetCreated): undo deletes it
//
// A Set only saves work: a pre-image journaled twice is harmless,
// because undo applies records newest first and the oldest pre-image of
// a byte is written last. So losing it (a restart, a rollback run
// again after a crash) costs duplicates, never correctness.
//
// # Record first, then act
//
// An Op is the records of one action: a FUSE request, a rollback step,
// a change a scan found. Each of its methods returns only once the
// record is appended (Journal.Append: in the record log, in the
// kernel's page cache at least, so it survives the daemon being
// killed; on disk with --sync), and the caller performs its action only
// if that succeeded: fail closed, never unrecorded. So a pre-image is
// journaled before the operation that destroys it reaches the backing
// directory (invariant 1). A State is marked captured only after its
// record is appended, and with the State locked from the check to the
// mark (Op.Take): a second change of the same identity waits, and never
// skips a pre-image still being written.
//
// # Withdrawing
//
// An action that then did nothing (the backing filesystem refused it, a
// rollback step that moved another object than it checked) withdraws
// what its Op appended (Op.Withdraw, Op.Discard): the records are
// discarded, newest first, and what they marked captured is forgotten,
// so that the next real change of those bytes or attributes journals
// them again. A mark that another Op relied on meanwhile — it took the
// same State, found the bytes captured and journaled nothing — stays,
// with its record. A failed discard is harmless: undoing a change that
// did not happen finds things as the record says they were. Killed
// between the record and its withdrawal, the daemon leaves the record,
// as when it is killed between a record and its action, which the
// ordering (record first) always allowed.
//
// # Reading pre-images
//
// Content is read from a Source, opened only when bytes are missing.
// File reads a raw descriptor at offsets and has an Fd, through which
// the journal finds the file's holes (lseek SEEK_DATA/SEEK_HOLE,
// package sparse) and neither reads nor stores them; an *os.File has
// one too. A source without one is all data.
//
// # Cost
//
// Every WRITE takes an identity's State and checks it: once the
// identity is captured, that is two uncontended locks, a map lookup and
// a range check, and no allocation — an Op keeps the first states it
// takes in place (BenchmarkCaptured, and fs's BenchmarkCapturedWrite).
//
// Imports: journal, backing (and, through journal, sparse, journal/pack
// and journal/wal).
package capture
