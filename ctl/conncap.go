package ctl

import (
	"net"
	"sync"
	"syscall"
)

// MaxConns caps the control connections a server holds open at once.
// Each holds a descriptor of the daemon, which needs its descriptors
// for the files the workspace's processes open through the mount: with
// no cap, enough idle connections (one per descriptor the limit allows)
// make file operations in the workspace fail with EMFILE. At the cap
// the server stops accepting: further connections wait in the kernel's
// listen backlog, which costs the daemon no descriptor, and are served
// in turn as others close; past the backlog a client's connect fails at
// once. Event streams count for as long as they follow. A connection
// that sends nothing is closed after the server's header timeout, an
// idle one after its idle timeout, so a slot comes back by itself.
// A remote listener (ServeRemote) has slots of its own, so peers on the
// network cannot take those of the socket's clients.
const MaxConns = 128

// connCap is MaxConns, or an eighth of the descriptor limit if that is
// less, so the connections never take most of a small limit.
func connCap() int {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur/8 < MaxConns {
		return max(int(lim.Cur/8), 4)
	}
	return MaxConns
}

// capListener accepts at most cap connections that are open at once.
type capListener struct {
	net.Listener
	slots     chan struct{} // one token per open connection
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func newCapListener(ln net.Listener, n int) *capListener {
	return &capListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *capListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &cappedConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

// Close closes the listener and ends an Accept waiting for a slot.
func (l *capListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// cappedConn gives its slot back when closed.
type cappedConn struct {
	net.Conn
	release func()
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// SyscallConn reaches the socket beneath, for SO_PEERCRED.
func (c *cappedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, syscall.EINVAL
	}
	return sc.SyscallConn()
}
