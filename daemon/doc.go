// Package daemon is the cowfs daemon for one workspace: it finds the
// workspace's state directory, checks that a mount can start (clearing
// a stale one), opens the journal and the aside area, mounts the
// filesystem, and serves the control socket, implementing ctl.Service
// on top of the journal and rollback.
//
// # Locations
//
// Each workspace has a state directory outside it, named after the
// workspace's path: StateRoot()/NAME-HASH, mode 0700. It holds the
// control socket (ctl.sock), the journal (journal/, unless --journal
// moves it) and, in background mode, the daemon's log. The CLI finds a
// daemon from a path by computing the same name, for the path and each
// of its parents.
//
// Imports: fs, journal, aside, backing, rollback, ctl; it re-exports
// the errors the CLI tells apart, so cmd/cowfs imports only daemon and
// ctl.
package daemon
