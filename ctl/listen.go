package ctl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cowfs/cowfs/privdir"
)

// Listen listens on the Unix socket at path. A socket file left by a
// dead daemon is replaced; one a live daemon answers on is not.
//
// The socket's directory is opened by descriptor and refused unless
// only root and this uid can change it and every directory above it
// (privdir), then made 0700. Everything after that goes through its
// descriptor, never its path: the socket is bound under a temporary
// name beneath /proc/self/fd/N, made 0600 through a descriptor of its
// own inode, and renamed to its name.
//
// Who can reach it before its mode is set: connect(2) needs search
// permission on every directory of the path and write permission on
// the socket. The directory is this uid's and 0700 before anything is
// bound in it, so from bind(2) on only this uid and root — the peers
// the server admits anyway — could connect at all, and they look for
// the final name, which appears with its mode already 0600 and its
// listen queue open. The rename also replaces a dead daemon's socket in
// one step: no moment without a socket, and none with a stale one.
//
// Closing the listener leaves the name: the caller removes the socket
// when it is done (the daemon does so last, see daemon.release).
func Listen(path string) (net.Listener, error) {
	dir, err := privdir.Create(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("control socket directory %s: %w", filepath.Dir(path), err)
	}
	defer dir.Close()
	if err := dir.Chmod(0o700); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	name := filepath.Base(path)
	if st, err := dir.Lstat(name); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFSOCK {
		if c, err := net.DialTimeout("unix", dir.Beneath(name), time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("control socket %s: another daemon is listening", path)
		}
	}
	tmp := "." + name + ".new"
	dir.Remove(tmp) // left by a daemon that died here
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: dir.Beneath(tmp), Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	// Its bound name goes with the descriptor: the daemon removes the
	// socket by its real name when it is done.
	ln.SetUnlinkOnClose(false)
	if err = dir.ChmodSocket(tmp, 0o600); err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		ln.Close()
		dir.Remove(tmp)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

type peerKey struct{}

// withPeer puts the connecting process's credentials in the context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	if cred, err := peerCred(c); err == nil {
		return context.WithValue(ctx, peerKey{}, cred)
	}
	return ctx
}

// peerCred returns the credentials of the process at the other end of a
// Unix socket connection: who connected, or who listens (SO_PEERCRED
// holds what the peer was when it called connect(2) or listen(2)).
func peerCred(c net.Conn) (*syscall.Ucred, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("not a Unix socket connection: %T", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		cred, gerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, gerr
}

// checkPeer lets only the daemon's uid and root in, or, over TLS, a
// client whose certificate the handshake verified against ca.pem
// (ServerTLS requires one; this checks it again where it matters).
func (s *Server) checkPeer(h http.Handler) http.Handler {
	self := uint32(os.Getuid())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			if len(r.TLS.VerifiedChains) == 0 {
				w.Header().Set("Connection", "close")
				writeError(w, s.log, Errorf(CodeForbidden, "no verified client certificate"), 0)
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		cred, _ := r.Context().Value(peerKey{}).(*syscall.Ucred)
		if cred == nil || (cred.Uid != 0 && cred.Uid != self) {
			// Nothing more for this peer: its connection is not kept.
			w.Header().Set("Connection", "close")
			writeError(w, s.log, Errorf(CodeForbidden, "this socket serves uid %d and root only", self), 0)
			return
		}
		h.ServeHTTP(w, r)
	})
}
