package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/test/testenv"
)

// # Stopping cowfs at the system call that names a file
//
// A rollback step checks an object and then acts on it; a racer who
// renames in between redirects the act. Racing for that window makes a
// flaky test. Instead, a syscall trap stops cowfs (the daemon, or the
// CLI rolling back offline) at exactly the k-th system call that names
// a given file, lets the racer exchange names there, and lets the call
// go on: every interleaving of one exchange with the steps is reached,
// in one run each, whatever the executor's code looks like.
//
// The trap is a seccomp filter that hands each file system call that
// takes a path to a supervisor in the test (SECCOMP_RET_USER_NOTIF).
// The supervisor reads the path from the caller's memory, counts it,
// and lets the call continue unchanged (SECCOMP_USER_NOTIF_FLAG_CONTINUE)
// after what the test asked to do at that count, if anything. The test
// binary, re-executed as the wrapper (trapRole), installs the filter,
// passes its listener to the test over a socket and executes cowfs;
// every process cowfs starts inherits the filter.

// trapRole makes the re-executed test binary the wrapper (roles_test.go).
const trapRole = "trap"

// trapLogEnv, set to a prefix, has the trap print each call it counts
// that names a file beginning with it, while armed: which calls a step
// makes, and in which order.
const trapLogEnv = "COWFS_TEST_TRAP_LOG"

// pathArgs lists, per system call the trap sees, which arguments are
// paths. The calls are the *at family and the path xattr calls, which
// are all a Go program on Linux uses to name files.
var pathArgs = map[uintptr][]int{
	unix.SYS_OPENAT: {1}, unix.SYS_OPENAT2: {1}, unix.SYS_NEWFSTATAT: {1}, unix.SYS_STATX: {1},
	unix.SYS_RENAMEAT: {1, 3}, unix.SYS_RENAMEAT2: {1, 3}, unix.SYS_LINKAT: {1, 3}, unix.SYS_SYMLINKAT: {2},
	unix.SYS_UNLINKAT: {1}, unix.SYS_MKDIRAT: {1}, unix.SYS_MKNODAT: {1}, unix.SYS_READLINKAT: {1},
	unix.SYS_FCHOWNAT: {1}, unix.SYS_FCHMODAT: {1}, unix.SYS_FCHMODAT2: {1}, unix.SYS_UTIMENSAT: {1},
	unix.SYS_FACCESSAT: {1}, unix.SYS_FACCESSAT2: {1}, unix.SYS_TRUNCATE: {0},
	unix.SYS_SETXATTR: {0}, unix.SYS_LSETXATTR: {0}, unix.SYS_GETXATTR: {0}, unix.SYS_LGETXATTR: {0},
	unix.SYS_REMOVEXATTR: {0}, unix.SYS_LREMOVEXATTR: {0},
	unix.SYS_SETXATTRAT: {1}, unix.SYS_GETXATTRAT: {1}, unix.SYS_REMOVEXATTRAT: {1},
}

// auditArch is the seccomp architecture of the calls pathArgs numbers.
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}

// notifyFilter returns the BPF program that hands pathArgs' calls to
// the listener and allows everything else.
func notifyFilter(arch uint32) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	var nrs []uint32
	for nr := range pathArgs {
		nrs = append(nrs, uint32(nr))
	}
	n := len(nrs)
	// 0: arch; 1: not ours -> allow; 2: nr; 3..3+n-1: ours -> notify;
	// 3+n: allow; 4+n: notify.
	prog := []unix.SockFilter{
		{Code: ld, K: 4},
		{Code: jeq, K: arch, Jt: 0, Jf: uint8(n + 1)},
		{Code: ld, K: 0},
	}
	for i, nr := range nrs {
		prog = append(prog, unix.SockFilter{Code: jeq, K: nr, Jt: uint8(n - i), Jf: 0})
	}
	return append(prog,
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_USER_NOTIF})
}

// trapExec is the wrapper: it installs the filter on this thread, sends
// the listener over descriptor 3 and executes os.Args[1:] from this
// thread, so that the program it starts runs under the filter.
func trapExec() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "syscall trap:", err)
		os.Exit(120)
	}
	runtime.LockOSThread()
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		fail(fmt.Errorf("no seccomp architecture for %s", runtime.GOARCH))
	}
	prog := notifyFilter(arch)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		fail(fmt.Errorf("seccomp: %w", errno))
	}
	if err := unix.Sendmsg(3, []byte{0}, unix.UnixRights(int(fd)), nil, 0); err != nil {
		fail(fmt.Errorf("sending the listener: %w", err))
	}
	unix.Close(3)
	unix.Close(int(fd))
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, roleEnv+"=") {
			env = append(env, e)
		}
	}
	fail(syscall.Exec(os.Args[1], os.Args[1:], env))
}

// seccomp_notif and seccomp_notif_resp (linux/seccomp.h).
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// trapKey is a place to stop: the count-th call naming name.
type trapKey struct {
	name  string
	count int
}

// syscallTrap is the supervisor of every process started through
// command. While armed it counts the calls naming each file (by the
// last component of a path argument) and runs the action set for a
// count before the call goes on.
type syscallTrap struct {
	t   testing.TB
	bin string // the test binary, where cowfs processes can execute it

	mu      sync.Mutex
	armed   bool
	counts  map[string]int
	actions map[trapKey]func()
	fired   map[trapKey]bool
	wg      sync.WaitGroup
	over    atomic.Bool // the test is over: errors are not its any more
}

// errorf fails the test, while it runs.
func (tr *syscallTrap) errorf(format string, args ...any) {
	if !tr.over.Load() {
		tr.t.Errorf(format, args...)
	}
}

// newSyscallTrap makes a trap. It registers its cleanup first, so
// that it outlives the workspaces the test makes afterwards: the
// daemons under it keep being answered until they are gone.
func newSyscallTrap(t testing.TB, bin string) *syscallTrap {
	t.Helper()
	if _, ok := auditArch[runtime.GOARCH]; !ok {
		testenv.Skip(t, "no syscall trap on "+runtime.GOARCH)
	}
	tr := &syscallTrap{t: t, bin: bin, counts: map[string]int{}, actions: map[trapKey]func(){}, fired: map[trapKey]bool{}}
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { tr.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("a process under the syscall trap still runs 30 s after the test")
		}
		tr.over.Store(true)
	})
	probe := tr.command("/bin/true")
	var out bytes.Buffer
	probe.Stderr = &out
	if err := tr.start(probe); err != nil {
		probe.Wait()
		testenv.Skip(t, fmt.Sprintf("no seccomp user notification here: %v: %s", err, out.Bytes()))
	}
	if err := probe.Wait(); err != nil {
		t.Fatalf("/bin/true under the syscall trap: %v: %s", err, out.Bytes())
	}
	return tr
}

// arm clears the counts and starts counting; each action runs before
// the call it is set for. Names are last path components.
func (tr *syscallTrap) arm(actions map[trapKey]func()) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.armed, tr.counts, tr.actions, tr.fired = true, map[string]int{}, actions, map[trapKey]bool{}
}

// disarm stops counting and returns the counts and the actions run.
func (tr *syscallTrap) disarm() (counts map[string]int, fired map[trapKey]bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.armed = false
	return tr.counts, tr.fired
}

// command returns a command that runs argv under the trap. Start it
// with start.
func (tr *syscallTrap) command(argv ...string) *exec.Cmd {
	cmd := exec.Command(tr.bin, argv...)
	cmd.Env = append(os.Environ(), roleEnv+"="+trapRole)
	return cmd
}

// start starts cmd (from command) and begins supervising it.
func (tr *syscallTrap) start(cmd *exec.Cmd) error {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "trap"), os.NewFile(uintptr(pair[1]), "trap-child")
	defer ours.Close()
	cmd.ExtraFiles = []*os.File{theirs}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return err
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(ours.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return fmt.Errorf("receiving the seccomp listener: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return fmt.Errorf("no seccomp listener from the wrapper (%d messages): %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return fmt.Errorf("no seccomp listener from the wrapper: %v", err)
	}
	tr.wg.Add(1)
	go tr.serve(fds[0])
	return nil
}

// serve answers the listener fd until no process uses its filter.
func (tr *syscallTrap) serve(fd int) {
	defer tr.wg.Done()
	defer unix.Close(fd)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			tr.errorf("syscall trap: poll: %v", err)
			return
		}
		if pfd[0].Revents&unix.POLLIN == 0 {
			return // POLLHUP: every process under the filter is gone
		}
		var n seccompNotif
		if err := ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINTR) {
				continue // the caller went away
			}
			tr.errorf("syscall trap: receive: %v", err)
			return
		}
		tr.handle(fd, &n)
		resp := seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		if err := ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil && !errors.Is(err, unix.ENOENT) {
			tr.errorf("syscall trap: send: %v", err)
			return
		}
	}
}

// handle counts the names call n passes and runs the actions due.
func (tr *syscallTrap) handle(fd int, n *seccompNotif) {
	tr.mu.Lock()
	armed := tr.armed
	tr.mu.Unlock()
	if !armed {
		return
	}
	for _, i := range pathArgs[uintptr(n.Nr)] {
		if n.Args[i] == 0 {
			continue
		}
		p, err := readString(n.Pid, n.Args[i])
		// The caller may have died (and its pid been reused) while
		// the path was read: then the path means nothing.
		if err != nil || ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&n.ID)) != nil {
			return
		}
		name := path.Base(p)
		if prefix := os.Getenv(trapLogEnv); prefix != "" && strings.HasPrefix(name, prefix) {
			fmt.Fprintf(os.Stderr, "syscall trap: tid %d: syscall %d %q\n", n.Pid, n.Nr, p)
		}
		tr.mu.Lock()
		tr.counts[name]++
		k := trapKey{name, tr.counts[name]}
		act := tr.actions[k]
		if act != nil {
			tr.fired[k] = true
		}
		tr.mu.Unlock()
		if act != nil {
			act()
		}
	}
}

// readString reads the NUL-terminated string at addr in process pid.
func readString(pid uint32, addr uint64) (string, error) {
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/mem")
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, unix.PathMax)
	n, err := f.ReadAt(buf, int64(addr))
	if n == 0 {
		return "", err
	}
	if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
		return string(buf[:i]), nil
	}
	return "", fmt.Errorf("path at %#x in %d: no NUL in %d bytes", addr, pid, n)
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}
