// Package ctl is cowfs's control socket: HTTP/1.1 and JSON over a Unix
// socket, versioned under /v1/, usable with curl --unix-socket. It holds
// the wire types (api.go), the server, which calls a Service the daemon
// implements, and the Go client the CLI uses.
//
// The socket is mode 0600 in a 0700 directory, and every connection's
// peer uid is checked (SO_PEERCRED): only the daemon's own uid and root
// may talk to it. Request bodies are capped and strictly decoded;
// every error is {"error": {"code", "message"}} with a fitting status.
//
// Imports: the standard library only.
package ctl
