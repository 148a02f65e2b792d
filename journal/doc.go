// Package journal stores what cowfs must keep to undo a workspace's
// recent history: turns, the records of every change made through the
// mount, and the pre-image content those records point to.
//
// # Layout
//
// Everything lives in one Badger database. Keys start with a one-byte
// prefix; numbers are big-endian so keys sort in numeric order:
//
//	'M'                      format metadata (JSON)
//	't' turn(8)              one turn (JSON)
//	'r' seq(8)               one record (binary, see codec.go)
//	'c' sha256(32)           one content chunk, zstd-compressed
//	'x' sha256(32) seq(8)    "record seq references this chunk" (empty value)
//	'k' turn(8)              a rollback marker (JSON)
//	'W'                      the workspace token (binding.go)
//
// Records are numbered by a global sequence that never goes back. A
// turn owns the records whose sequence falls in [StartSeq, EndSeq);
// records between turns belong to no turn (turn 0, "outside a turn").
// docs/journal-format.md documents the bytes and carries the format
// version; bump FormatVersion when they change.
//
// # Content
//
// Pre-image bytes are cut into chunks of at most ChunkSize, addressed
// by the SHA-256 of their uncompressed bytes, compressed with zstd and
// stored once however many records refer to them. A chunk lives as
// long as some 'x' key names it. Chunks are committed in batches of
// at most batchBytes so a large pre-image never makes Badger hold an
// unbounded transaction in memory (ErrTxnTooBig).
//
// # Durability
//
// Append returns only after Badger has accepted the commit: the record
// and its chunks are in Badger's write-ahead log, which is a file
// mapping, so they are in the kernel's page cache and survive a kill
// -9 of the daemon. With Options.Sync the commit is also fsynced and
// survives a power cut. Callers rely on this: the pre-image is
// recorded before the operation that destroys it is performed.
//
// A record is committed after its chunks. A crash between the two
// leaves chunks nobody references; Open sweeps them. A crash in the
// middle of a prune leaves records older than the oldest turn; Open
// finishes the prune.
//
// # Window
//
// Only the last Options.Window turns are kept. Prune drops the oldest
// turns with every record before the first kept turn, deletes the
// chunks no remaining record references, and runs Badger's value-log
// garbage collection so the space is given back.
//
// This package knows nothing of FUSE or of the workspace's files; it
// imports Badger, zstd and the standard library only.
package journal
