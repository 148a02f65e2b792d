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
// control socket (ctl.sock; NAME-HASH.sock in $COWFS_SOCKET_DIR if
// set), the journal (journal/, unless --journal moves it; journal.dir
// records where), and the daemon's log. The CLI finds a daemon from a
// path by computing the same name, for the path and each of its
// parents. The state directory and the socket's are created and
// checked by descriptor (privdir): one another user could change — a
// symlink on the way, someone else's directory, one writable by others
// — is refused before anything is opened or mounted (ErrUnsafeDir).
//
// # Remote clients
//
// With Options.Listen the daemon also serves the control API on TCP,
// over mutual TLS with the certificates of Options.TLSDir (remote.go,
// ctl.ServeRemote): read and bound first thing in Start, so a bad
// certificate or a port in use fails the start with nothing mounted
// (ErrListen); read again by ReloadTLS, which the CLI calls on SIGHUP.
// The status says where it listens.
//
// # Without a mount
//
// OpenOffline does what Start does but mount, for a workspace no daemon
// serves, and serves the same ctl.Service on a private socket: the
// CLI's history commands work on a journal whose daemon is gone
// (offline.go). cowfs run's sandbox is an ordinary Start in a private
// mount namespace.
//
// # Changes
//
// The journal keeps records; what a turn, a step or the time outside
// turns changed is the daemon's to say (changes.go): records folded, in
// order, into one net change per path — created, modified, deleted,
// renamed, metadata — as the control API, the CLI and the diff show
// them.
//
// Imports: fs, journal, aside, backing, rollback, ctl, privdir; it
// re-exports the errors the CLI tells apart, so cmd/cowfs imports only
// daemon and ctl.
package daemon
