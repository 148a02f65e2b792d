// Package wal is the journal's record log: how a record becomes
// durable before the change it records proceeds, without a Badger
// transaction on the way. It knows nothing of records or keys: an
// entry is a list of blind sets and deletes of byte keys (Op), and a
// Store — Badger, for the journal — is where they are applied.
//
// # Why a log
//
// A Badger commit hands the transaction to Badger's writer goroutine
// and waits for it, and its oracle's watermarks, to come back: four
// goroutine wake-ups per record, and with one FUSE reader serving
// requests inline, every record waited for them. So the journal writes
// each record — the record, its chunk references, the index entries of
// chunks it stored — as one entry with write(2) to the log file
// "log.NNNNNNNNNNNNNNNN" beside Badger, and returns: the entry is in
// the kernel's page cache and survives a kill -9 of the daemon, as a
// Badger commit did (with Options.Sync it is fdatasync'd first, as
// Badger's commit was). The journal's invariant holds as before: the
// change proceeds only once its record is that durable.
//
// # Applying
//
// The log's entries reach the store in batches — many records per
// transaction — from a goroutine of their own, woken when ApplyOps are
// pending and every 50ms; and whenever the caller asks (Apply): the
// journal does before anything reads Badger or writes it directly, so
// Badger is never behind a record when it is read. After each batch the
// store's Mark notes how far the log is applied (generation and offset,
// set after the batch is written). At Open, whatever follows the mark
// is applied again before anything else: every entry is a list of
// blind sets and deletes, so applying a suffix of the log again over a
// store that already has part of it ends in the same state — provided
// nothing else wrote those keys in between, which the journal ensures:
// every direct write applies the log first, and the mark, before it
// writes.
//
// An entry cut short by a crash (a kill -9 in the middle of write(2),
// or power lost without Sync) fails its checksum: it and what follows
// are dropped, and the change it was for never happened. An entry that
// fails to be written is cut back off; if even that fails, the log
// takes no more (ErrBroken).
//
// A value a writer must find before the store has it — the journal's
// index entry of a chunk a logged record stored — is marked Lookup,
// and Pending answers for it until the store has it.
//
// # Rotation
//
// A log past 8 MiB, fully applied, is replaced by a new generation,
// made before the mark names it (Log.rotate says why that order loses
// nothing).
//
// This package imports x/sys/unix and the standard library only.
package wal
