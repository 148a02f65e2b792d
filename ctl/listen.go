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
)

// Listen listens on the Unix socket at path, in a directory of mode
// 0700, with the socket itself mode 0600. A socket file left by a dead
// daemon is replaced; one a live daemon answers on is not.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: another daemon is listening", path)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

type peerKey struct{}

// withPeer puts the connecting process's credentials in the context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *syscall.Ucred
	raw.Control(func(fd uintptr) {
		cred, _ = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if cred == nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, cred)
}

// checkPeer lets only the daemon's uid and root in.
func (s *Server) checkPeer(h http.Handler) http.Handler {
	self := uint32(os.Getuid())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, _ := r.Context().Value(peerKey{}).(*syscall.Ucred)
		if cred == nil || (cred.Uid != 0 && cred.Uid != self) {
			writeError(w, s.log, Errorf(CodeForbidden, "this socket serves uid %d and root only", self), 0)
			return
		}
		h.ServeHTTP(w, r)
	})
}
