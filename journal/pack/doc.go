// Package pack stores content: the journal's pre-image bytes, cut into
// chunks where the content says, compressed, and appended to pack
// files. It knows nothing of records, turns or Badger; the journal
// keeps the index from a chunk's hash to its Loc and decides when a
// chunk or a pack is no longer needed.
//
// # Pack files
//
// Pack files hold the content outside Badger (restic's packs are the
// model). Badger's value log gives space back only when its compactions
// report values discarded, never from the file it is writing, and a
// journal's index is too small to compact often: content deleted there
// stayed on disk. A pack is a plain file that is appended to, then
// sealed, then deleted whole when nothing needs it, or rewritten
// ("repacked", PlanRepack) when only part of it is needed.
//
// A pack is
//
//	magic   8 bytes "cowfspk1"
//	entry*  32-byte SHA-256 of the uncompressed bytes,
//	        uint32 LE uncompressed length, uint32 LE stored length,
//	        the stored bytes (one zstd frame)
//
// Entries carry their hash so a location can be checked (a wrong one
// fails loud) and a pack can be read without the index.
// docs/journal-format.md documents these bytes with the journal's.
//
// # Chunks
//
// Content is cut into chunks where the content says (Cut, chunker.go),
// addressed by the SHA-256 of their uncompressed bytes (Hash) and
// compressed one zstd frame each (Codec). Filter answers "may the
// index hold this chunk?" without asking the index, for deduplication.
//
// # Durability
//
// Add returns once the entry is written (write(2)): in the kernel's
// page cache, surviving a kill -9 of the process; Flush, or sealing
// with sync, makes it durable against a power cut. The caller writes
// an index entry only after the bytes it names are there, so an entry
// never names bytes that are not: a crash before the entry leaves
// bytes no entry names, unused space that a repack gives back. A
// write that fails is cut back off the pack, so a pack stays a
// sequence of whole entries (or ends in a torn tail that no entry
// names). A new pack's name is made durable (with sync) before any
// entry in it counts. A pack is removed only when the caller's index
// names nothing in it, made durable first; Read of a pack that is gone
// is ErrDamaged, never "not found".
//
// This package imports zstd and the standard library only.
package pack
