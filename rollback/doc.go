// Package rollback puts a workspace back as it was when a turn began:
// first a plan, which can be shown (dry run), then its execution. It
// reads the journal and writes the backing directory; it knows nothing
// of FUSE.
//
// # Going back in time
//
// Records are undone newest first. past keeps the namespace at the time
// reached so far as a sparse map over the present (where is the object
// that was at this path then?), so a renamed directory is followed as
// one entry however many files it holds. Content comes back by inode
// identity: the Data and Attr records of an inode, newest first, put
// its bytes (its holes as holes, content.go) and size back; identities
// are unique within the window because removed inodes are kept aside,
// not freed.
//
// # Reading the past
//
// At (cat --at, diff, export) is the same going back without a plan:
// the records since a time are streamed newest first from the journal
// into past and an index of each inode's data and attribute records
// (their numbers, never the records), so a workspace's past costs its
// paths and 24 bytes a record, and a file's version is found in its
// index. Lookups are made under the journal's gate, pinned (journal.Pin);
// copies after it is left: the records appended while an object was
// copied are read once the copy is made and undone first, so a version
// at the start of an epoch comes out exact whatever changed meanwhile.
//
// # Containment
//
// Every path is resolved beneath the backing root with openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (backing.Tree): a symlink planted in the
// workspace cannot make cowfs read or write outside it.
//
// # Undoable
//
// What a rollback is about to destroy is journaled first, as the mount
// journals an agent's changes, through package capture (undolog.go):
// each pre-image once in the run, tagged with the rollback's group;
// unrevert undoes those records.
//
// Imports: journal, capture, aside, backing, sparse, x/sys/unix.
package rollback
