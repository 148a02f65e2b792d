// Package rescan finds changes that reached the backing directory
// without going through the mount: the host side of a sandbox, a
// process in another mount namespace, edits made while cowfs was not
// running. The FUSE layer cannot see them; rollback must not destroy
// them.
//
// For every path the window's records name, the journal keeps the
// fingerprint (type, mode, link count, inode, size, mtime, ctime) a scan
// last saw; a scan reads them from the journal a batch at a time, so
// the daemon holds none of them between scans. A scan
// runs at each turn boundary, before each rollback and unrevert plans,
// and at start-up; after a rollback or an unrevert, the fingerprints of
// what it touched are refreshed (refresh.go), so that those paths stay
// watched. It stats tracked paths (never reads or hashes a file, never
// walks the workspace) and compares. A full scan stats every tracked
// path: its cost is the number of tracked paths. Where fanotify is
// available (watch.go), the directories holding tracked paths are
// watched, and a scan stats only what may have changed since the last
// (changed.go): what the records since then name, and what the
// watcher's events name — its cost is what changed. The scan at
// start-up is a full one (nothing was watching), and so is any scan
// after hints may have been lost. Either way, each path it stats is
// judged the same:
//
//   - a path that records appended since the last scan explain — a
//     change through the mount (or by a rollback) to the path, to the
//     inode it holds, to an entry directly inside it (a directory's
//     times), or a rename or removal of a directory above it — takes
//     its new fingerprint silently; so does one whose inode the mount
//     changed in place since (its stamp, below), which journals nothing
//     when it journaled the inode earlier in the epoch;
//   - any other difference is a change outside the mount: it is
//     journaled as a KindOutside record (modified, deleted, created,
//     replaced), the mount is told to drop what the kernel caches of
//     the path, and the new fingerprint is kept.
//
// A KindOutside record has no pre-image: the planner never offers it as
// restorable and treats its path as a conflict, which only force
// overrides. Changes a scan could not attribute are therefore never
// overwritten silently. A file changed both through and outside the
// mount between two scans is caught by time: the mount stamps each inode
// it changes, after the change (fs.Mount.TakeStamps), and a file whose
// mtime is later was written again outside the mount (within the
// kernel's clock granularity, a few milliseconds, it may go unseen; so
// may a change of metadata alone; and a write the kernel still holds in
// its writeback cache reaches the backing directory — and is stamped —
// only when flushed, after any change outside the mount made meanwhile).
//
// Paths not in the window's records are not tracked: a file created
// outside the mount where no record names a path is simply part of the
// workspace, which a rollback leaves alone (it only undoes records).
//
// A scan's records go through package capture, the one path to
// Journal.Append that the mount and a rollback's undo log take too.
//
// Imports: journal, capture, aside, backing, x/sys/unix.
package rescan
