// Package journal stores what cowfs must keep to undo a workspace's
// recent history: turns, the records of every change made through the
// mount, and the pre-image content those records point to.
//
// # Parts
//
// Journal is the orchestrator: it owns Badger, the turns, the records
// and their order against changes (the gate), and the index of content
// chunks; it decides what stays and what goes. Two parts do one job
// each, know nothing of records or turns, and are tested alone:
//
//   - package journal/wal, the record log: how an entry of blind sets
//     and deletes becomes durable with one write(2) and reaches Badger
//     later, replayed after a crash (walstore.go gives it Badger);
//   - package journal/pack, content storage: content-defined chunking,
//     zstd, pack files and their entries, the chunk filter, and the
//     repack plan.
//
// # Layout
//
// Records, turns and the index live in one Badger database; content
// lives in pack files beside it (package pack). Keys start with a one-byte
// prefix; numbers are big-endian so keys sort in numeric order:
//
//	'M'                      format metadata (JSON)
//	't' turn(8)              one turn (JSON)
//	'r' seq(8)               one record (binary, see codec.go)
//	'c' sha256(32)           where a content chunk is: pack, offset, length
//	'x' sha256(32) seq(8)    "record seq references this chunk" (empty value)
//	'k' turn(8)              a rollback marker (JSON)
//	'b' id(8)                a rollback (JSON, rollback.go)
//	'p' id(8) kind version part   a part of its plan or skipped list (blob.go)
//	'W'                      the workspace token (binding.go)
//	'L'                      how far the record log is applied (walstore.go)
//
// Records are numbered by a global sequence that never goes back. A
// turn owns the records whose sequence falls in [StartSeq, EndSeq);
// records between turns belong to no turn (turn 0, "outside a turn"),
// but for the changes of forgotten turns that a rollback skipped, which
// keep their turn's number until a rollback undoes them (settle.go).
// docs/journal-format.md documents the bytes and carries the format
// version; bump FormatVersion when they change.
//
// # Content
//
// Pre-image bytes are cut into chunks where their content says
// (pack.Cut: 64 KiB to 1 MiB), addressed by the SHA-256 of their
// uncompressed bytes, compressed with zstd and appended to a pack file,
// once however many records refer to them: the same file rewritten
// unchanged every turn costs a record and its references. A chunk lives
// as long as some 'x' key names it. Packs are sealed at every prune;
// a sealed pack nothing in the index names is deleted, and one mostly
// unused is repacked (reclaim.go), so the journal's size follows what
// the window needs.
//
// Holes are not content: a data record lists the holes of its range
// and keeps the bytes of the data around them only (holes.go), so the
// pre-image of a sparse file costs its data, not its size.
//
// # Durability
//
// Append returns only after its chunks were written to their pack
// (write(2)) and its record — with its chunk references and the index
// entries of the chunks it stored — was written to the record log
// (package wal): all are in the kernel's page cache and survive a kill -9
// of the daemon. With Options.Sync the pack is fsynced before the log
// entry is written and the entry is fdatasync'd: they survive a power
// cut. Callers rely on this: the pre-image is recorded before the
// operation that destroys it is performed. The log reaches Badger in
// batches, and before every read or direct write of Badger (store);
// at open, what a crash left in it is applied first.
//
// A crash in the middle of a prune leaves records older than the
// oldest turn; Open finishes the prune. reclaim.go says why repacking
// is safe too.
//
// # Window
//
// Only the last Options.Window turns are kept. Prune drops the oldest
// turns with every record before the first kept turn, deletes the
// chunks no remaining record references, and reclaims their packs.
//
// # Space
//
// The journal stays under Options.MaxSize and keeps a reserve free on
// its filesystem; past either, the oldest turns leave the window early
// (space.go), and a record that still does not fit is refused with
// ErrNoSpace, so the change it records fails with ENOSPC.
//
// This package knows nothing of FUSE or of the workspace's files, nor
// of how its history reads for people (the daemon folds records into
// changes); it imports Badger, x/sys/unix, its parts journal/pack and
// journal/wal, package sparse and the standard library only.
package journal
