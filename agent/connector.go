package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// The kernel's process-events connector (include/uapi/linux/cn_proc.h,
// connector.h): a netlink socket that, once told to listen, receives a
// message for every fork, exec and exit on the machine.
const (
	cnIdxProc         = 1 // CN_IDX_PROC
	cnValProc         = 1 // CN_VAL_PROC
	procCnMcastListen = 1 // PROC_CN_MCAST_LISTEN

	procEventFork = 0x00000001
	procEventExec = 0x00000002
	procEventExit = 0x80000000

	nlmsgHdrLen = 16 // struct nlmsghdr
	cnMsgLen    = 20 // struct cn_msg, before its data
	// struct proc_event: what, cpu, timestamp_ns, then event_data.
	procEventData = 16

	// rcvBuf is the socket's receive buffer: a burst of forks
	// (a parallel build) should not overflow it before the reader
	// wakes. Set with SO_RCVBUFFORCE, which root may.
	rcvBuf = 4 << 20
)

// event is one process event the Tracker uses.
type event struct {
	what uint32
	// fork: the parent's process, and the child's thread and process;
	// exec and exit: the thread and its process (in pid and tgid).
	parent, pid, tgid uint32
}

// connector is a subscribed process-events socket.
type connector struct {
	fd  int
	buf []byte
}

// openConnector subscribes to process events. It fails outside the
// initial user and pid namespaces, or without CAP_NET_ADMIN.
func openConnector() (*connector, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, fmt.Errorf("process events: socket: %w", err)
	}
	c := &connector{fd: fd, buf: make([]byte, 64<<10)}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf); err != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		c.close()
		return nil, fmt.Errorf("process events: bind: %w", err)
	}
	msg := make([]byte, nlmsgHdrLen+cnMsgLen+4)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], unix.NLMSG_DONE)
	ne.PutUint32(msg[nlmsgHdrLen:], cnIdxProc)
	ne.PutUint32(msg[nlmsgHdrLen+4:], cnValProc)
	ne.PutUint16(msg[nlmsgHdrLen+16:], 4)
	ne.PutUint32(msg[nlmsgHdrLen+cnMsgLen:], procCnMcastListen)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		c.close()
		return nil, fmt.Errorf("process events: listen: %w", err)
	}
	return c, nil
}

func (c *connector) close() { unix.Close(c.fd) }

// errLost: the socket overflowed and events were dropped.
var errLost = errors.New("process events were lost (the socket overflowed)")

// read calls fn with every event queued now, without waiting for more.
// It returns errLost, after the events it could read, if the kernel
// dropped some.
func (c *connector) read(fn func(event)) error {
	lost := false
	for {
		n, _, err := unix.Recvfrom(c.fd, c.buf, unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
			if lost {
				return errLost
			}
			return nil
		case errors.Is(err, syscall.ENOBUFS):
			lost = true
			continue
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("process events: %w", err)
		}
		parse(c.buf[:n], fn)
	}
}

// parse calls fn with the fork, exec and exit events of the netlink
// messages in b.
func parse(b []byte, fn func(event)) {
	ne := binary.NativeEndian
	for len(b) >= nlmsgHdrLen {
		l := int(ne.Uint32(b))
		if l < nlmsgHdrLen || l > len(b) {
			return
		}
		m := b[nlmsgHdrLen:l]
		b = b[(l+3)&^3:]
		if len(m) < cnMsgLen+procEventData+16 {
			continue
		}
		if ne.Uint32(m) != cnIdxProc || ne.Uint32(m[4:]) != cnValProc {
			continue
		}
		p := m[cnMsgLen:]
		d := p[procEventData:]
		switch what := ne.Uint32(p); what {
		case procEventFork:
			// parent_pid, parent_tgid, child_pid, child_tgid
			fn(event{what: what, parent: ne.Uint32(d[4:]), pid: ne.Uint32(d[8:]), tgid: ne.Uint32(d[12:])})
		case procEventExec, procEventExit:
			// process_pid, process_tgid
			fn(event{what: what, pid: ne.Uint32(d), tgid: ne.Uint32(d[4:])})
		}
		if len(b) < nlmsgHdrLen {
			return
		}
	}
}
