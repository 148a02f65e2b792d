// Package fs is the FUSE filesystem cowfs mounts over a workspace. It is
// go-fuse's loopback filesystem with every operation that changes the
// backing directory made to journal, first, what it is about to
// destroy. It is the only package that imports go-fuse.
//
// # Capture before change
//
// Each mutating method opens a change (recorder.begin), journals its
// pre-image through change.record — the one caller of journal.Append —
// and performs its operation only if that succeeded; otherwise it fails
// with the error (EIO, ENOSPC, EROFS once the journal is closed). An
// operation the backing filesystem then refuses (EPERM on an immutable
// file, say) fails with the change withdrawing what it journaled: a
// failed operation leaves no record (withdraw.go). What is journaled
// for each FUSE request:
//
//	WRITE, WRITEV, mmap flush   bytes overwritten that existed when the epoch began
//	                            (an append: nothing but the old size)
//	SETATTR size, O_TRUNC       bytes cut off; the old size (first touch)
//	FALLOCATE punch/zero/collapse/insert   the bytes it destroys or moves
//	SETATTR mode/owner/times    the attributes (first touch)
//	SETXATTR, REMOVEXATTR       the old value, or its absence
//	MKNOD (also open O_CREAT), MKDIR, SYMLINK, LINK   "did not exist"
//	UNLINK, RMDIR               the inode, moved aside (package aside)
//	RENAME                      the rename; a replaced target, kept aside;
//	                            a whiteout left behind, as a creation
//	COPY_FILE_RANGE, IOCTL      refused, so the kernel falls back to writes
//
// An epoch is a turn (each of its steps a new one), or the time between
// two turns. Within one, an
// inode's attributes are journaled once (its "first touch") and each
// byte's pre-image at most once; inodes created in the epoch journal
// nothing more, since undo deletes them. A directory's attributes are
// journaled before its first entry change, so undo restores its times.
//
// # What must not slip past
//
// The kernel holds no file handles of cowfs's (opens are not even sent:
// io.go), so there is nothing it could write through behind the
// journal's back (FUSE passthrough, see file). There is no writeback
// cache either, so every write reaches the daemon as it happens; shared
// mmap pages arrive as WRITEs with pid 0 when the kernel flushes them,
// which FlushWriteback forces at turn boundaries and before rollbacks;
// pages cached before a rollback rewrote a file are never written back
// over it (rewritten.go). Writes with pid 0 are attributed to a process
// that maps the file (mapper.go).
//
// # Whose a change is
//
// During a turn whose harness named its agent, a change by a process
// outside that scope is journaled like any other but marked as not the
// turn's (agent.go); each side journals its own pre-images.
//
// # The private directory
//
// The backing root holds cowfs's private directory (aside.Dir), where
// removed inodes are kept. The root node hides it from lookups and
// listings and refuses to create, rename or remove anything by its
// name. Link counts are reported without the names held there.
//
// Imports: go-fuse, journal, aside, backing, agent.
package fs
