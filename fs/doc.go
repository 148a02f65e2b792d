// Package fs is the FUSE filesystem cowfs mounts over a workspace. It is
// go-fuse's loopback filesystem with every operation that changes the
// backing directory made to journal, first, what it is about to
// destroy. It is the only package that imports go-fuse.
//
// # Capture before change
//
// Each mutating method opens a change (recorder.begin), journals its
// pre-image through the change's capture.Op — package capture, which a
// rollback's undo log and package rescan use too, is the one path to
// Journal.Append — and performs its operation only if that succeeded;
// otherwise it fails with the error (EIO, ENOSPC, EROFS once the
// journal is closed). An operation the backing filesystem then refuses
// (EPERM on an immutable file, say) fails with the change withdrawing
// what it journaled: a failed operation leaves no record (withdraw.go).
// What is journaled for each FUSE request:
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
//	(a file the epoch created: the kernel writes it itself; see below)
//
// An epoch is a turn (each of its steps a new one), or the time between
// two turns. Within one, an inode's attributes are journaled once (its
// "first touch") and each byte's pre-image at most once; inodes created
// in the epoch journal nothing more, since undo deletes them. A
// directory's attributes are journaled before its first entry change,
// so undo restores its times. Package capture keeps that account
// (capture.Set), one for the turn's agent and one for everyone else
// (agent.go).
//
// # What must not slip past
//
// There is no writeback cache, so every write(2) reaches the daemon as
// it happens — except, with --passthrough, a write to a file the epoch
// created, which the kernel makes itself (below). Shared mmap pages of any other file
// arrive as WRITEs with pid 0 when the kernel flushes them, which
// FlushWriteback forces at turn boundaries and before rollbacks; pages
// cached before a rollback rewrote a file are never written back over
// it (rewritten.go). Writes with pid 0 are attributed to a process that
// maps the file (mapper.go).
//
// # Files the epoch created
//
// A regular file created in the current epoch has no pre-image: undo
// deletes it. So its reads and writes need not pass through the
// daemon, and with --passthrough (Config.NoPassthrough false) they do
// not: the open that creates it (CREATE), and every
// later open while the epoch lasts, get the backing file (FUSE
// passthrough), and the kernel reads, writes, splices and maps it
// itself (passthrough.go). Only its creation, truncations, fallocate,
// fsync and attribute changes are requests. Opens are then answered
// (io.go): the kernel refuses an open of an inode held in passthrough
// mode that is not in that mode too — an unseen open as well
// (TestPassthroughNeedsEveryOpen) — so the mode is the inode's, not
// the open's: passthrough if the turn's agent created it in this
// epoch, or while the kernel still holds a passthrough open of it.
// Without --passthrough, the default, the daemon stays on every read
// and write, opens unseen: answering every open costs a round trip the
// opener waits for (OPEN) and one it does not (RELEASE), which
// read-heavy work (grep, git) pays more than new files gain.
//
// The kernel binds an open file to its backing file for the file's
// life: the open cannot be handed back to the daemon when the epoch
// ends. Waiting for it to close would let a process that keeps a file
// open (a dev server's log) hold a boundary for ever. So the boundary
// captures: after a turn or step boundary, before it answers
// (Mount.EpochBegan), every file of the live set that the kernel still
// counts a writer of is journaled whole, attributes and every byte, as
// its first touch in the new epoch — what a WRITE over the whole file
// would have journaled. Why no byte of a later epoch escapes:
//
//   - The live set holds every file the kernel may write without the
//     daemon: a file joins it at its passthrough open, under the
//     journal's gate, so an open comes either before a boundary (and
//     the capture sees it) or after (and sees the new epoch, in which
//     the file was not created: no backing file, unless the kernel
//     still holds one, and then the file is in the set). It leaves
//     only when the kernel counts no writer of the backing inode: a
//     read lease (F_SETLEASE, F_RDLCK) is granted only on an inode no
//     file is open for writing. A passthrough open for writing holds a
//     writable backing file; a shared writable mapping holds its
//     backing file after its descriptor is closed; both count until
//     they go. (The daemon's own kept writer is closed first.)
//   - A file with a writer at a boundary is captured in the new epoch
//     before the boundary answers: every byte the writer changes
//     afterwards has its pre-image journaled there, and a rollback of
//     that epoch, or of any later one, restores it. A file without a
//     writer can only be written again through a new open, which goes
//     through the daemon.
//   - A mapping of a passthrough file maps the backing file's pages;
//     the capture reads the backing inode's page cache, which holds
//     them dirty or not, so it captures what the mapping shows. No
//     FUSE writeback is involved, so none can come late.
//   - The capture is not atomic against a writer racing the boundary:
//     a write(2) made during it may count partly before. A boundary can
//     already fall inside a write(2) larger than a WRITE request, or
//     between a mapping's pages; what a process writes after the
//     boundary answered is always journaled after it.
//   - Package rescan takes these writes, which change the backing file
//     with no request, for the mount's: every live file is stamped at
//     each scan and at each release (Mount.TakeStamps).
//   - A rollback runs between turns, whose epoch captured every live
//     file at its start; a writer writing on after a rollback writes
//     over the restored file, and the next boundary captures it again.
//
// A crash (kill -9) ends the FUSE connection, but not a passthrough
// open: the kernel serves it from the backing file without the daemon,
// and its mappings stay. What it writes while no daemon runs is found
// at start-up as a change made while cowfs was not running (package
// rescan). The next daemon then adopts it (adopt.go): it finds every
// descriptor open for writing, and every shared writable mapping,
// through a mount that is neither its own nor the backing filesystem's,
// on an inode of the workspace, and keeps those files in the live set
// like its own, so what they write in later turns rolls back.
//
// The kernel writes a backing file with the daemon's credentials, and
// opens it without open(2)'s checks. So a file whose set-id bits a
// write would clear, or that is append-only or immutable, gets no
// backing file. One limit remains: an open by a process outside the
// turn's agent of a file the agent holds in passthrough mode gets the
// backing file too (the mode is the inode's), and its writes count as
// the agent's, undone with the file.
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
// Imports: go-fuse, journal, capture, aside, backing, agent.
package fs
