// Package ctl is cowfs's control socket: HTTP/1.1 and JSON over a Unix
// socket, versioned under /v1/, usable with curl --unix-socket. It holds
// the wire types (api.go), the server, which calls a Service the daemon
// implements, and the Go client the CLI uses.
//
// # Who may talk to whom
//
// The socket's directory is reached by descriptor and refused unless
// only root and the daemon's uid can change it and every directory
// above it (package privdir); it is made 0700, and the socket, bound
// through that descriptor, is 0600 before it has its name (listen.go).
// The server checks every connection's peer uid (SO_PEERCRED): only
// the daemon's own uid and root are served. The client checks the
// other way round before it sends anything: the process listening must
// be root or the client's own uid (CheckServer), or the request would
// go to whoever put a socket at the path.
//
// Request bodies are capped and strictly decoded; every error is
// {"error": {"code", "message"}} with a fitting status. At most
// MaxConns connections are served at once (conncap.go), so connections
// cannot take the descriptors the mount needs.
//
// Imports: the standard library and privdir only.
package ctl
