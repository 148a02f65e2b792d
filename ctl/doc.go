// Package ctl is cowfs's control socket: HTTP/1.1 and JSON over a Unix
// socket, versioned under /v1/, usable with curl --unix-socket. It holds
// the wire types (api.go), the server, which calls a Service the daemon
// implements, and the Go client the CLI uses. The same API, the same
// handler, can also be served over TCP with mutual TLS, for clients on
// other machines (ServeRemote, NewRemote).
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
// # Remote clients
//
// Over TCP there is no peer uid: the certificate is the credential.
// The listener speaks TLS 1.3 only and requires a client certificate
// signed by the CA of its TLS directory's ca.pem
// (tls.RequireAndVerifyClientCert); there is no plaintext port and no
// anonymous access. Whoever holds such a certificate may do all that
// the socket's owner may. The directory's files are read beneath its
// descriptor and refused if others could change them or read the key
// (tlsdir.go); Reload reads them again for the next connections
// (tlsserver.go). The client checks the daemon's certificate against
// its own ca.pem before it sends anything, and Follow resumes an event
// stream across reconnects by seq, over TLS as over the socket.
//
// Request bodies are capped and strictly decoded; every error is
// {"error": {"code", "message"}} with a fitting status. At most
// MaxConns connections are served at once (conncap.go), so connections
// cannot take the descriptors the mount needs.
//
// Imports: the standard library, x/sys/unix and privdir only.
package ctl
