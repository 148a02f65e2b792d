package fs

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// processes caches process() for a moment: a command making many
// changes in a row (rm -rf, tar) has its thread looked up once, not for
// every change. The command name is read again at every use, through a
// descriptor of /proc/PID/comm kept open: an exec renames the process
// in place (sh -c '…; exec cp a b' is sh, then cp), and a pread on that
// descriptor costs a fraction of opening, reading and closing the file,
// let alone parsing /proc/TID/status. The descriptor names the process
// itself, not its number: once the process is gone it fails (ESRCH),
// and a new process given the same pid is looked up afresh.
var processes = struct {
	sync.Mutex
	m map[uint32]processEntry
}{m: map[uint32]processEntry{}}

type processEntry struct {
	pid          uint32
	fsuid, fsgid uint32 // the filesystem uid and gid
	comm         string
	// cmdline is the command line (cmdline.go), read at the first
	// change the process makes (hasCmdline) and again when its comm
	// changes (an exec): not at every use, since reading it costs more
	// and may have to be given up, nor for a process that only reads.
	cmdline    string
	hasCmdline bool
	fd         int // /proc/PID/comm, or -1
	at         time.Time
}

const (
	// processTTL bounds how long a thread id is taken to belong to the
	// process it was found in (a thread's id can be reused by another
	// process's thread once it ends).
	processTTL = 100 * time.Millisecond
	// maxProcesses bounds the cache, and so its open descriptors.
	maxProcesses = 256
)

// maxCachedThreads bounds the per-thread caches of groups in creds.go
// (processes here keep a descriptor each: maxProcesses): past it a cache
// starts again empty, so a build that runs through thousands of
// short-lived threads does not grow it.
const maxCachedThreads = 4096

// process returns the process (thread group) of thread tid — FUSE
// reports the calling thread — its command name, /proc/PID/comm at the
// time of the request, and its command line.
func process(tid uint32) (pid uint32, comm, cmdline string) {
	now := time.Now()
	processes.Lock()
	e, ok := processes.m[tid]
	if ok && now.Sub(e.at) < processTTL {
		if comm, ok := readComm(e.fd); ok {
			if e.hasCmdline && comm == e.comm {
				processes.Unlock()
				return e.pid, comm, e.cmdline
			}
			e.comm = comm
			processes.Unlock()
			return withCmdline(tid, e)
		}
	}
	if ok {
		closeEntry(e)
		delete(processes.m, tid)
	}
	processes.Unlock()
	return withCmdline(tid, lookupProcess(tid, now))
}

// withCmdline reads the command line of e, the entry of thread tid, and
// caches it unless the entry was replaced meanwhile. It reads without
// holding processes: the read may wait (cmdline.go).
func withCmdline(tid uint32, e processEntry) (uint32, string, string) {
	e.cmdline, e.hasCmdline = readCmdline(e.pid), true
	processes.Lock()
	if cur, ok := processes.m[tid]; ok && cur.fd == e.fd && cur.at == e.at {
		processes.m[tid] = e
	}
	processes.Unlock()
	return e.pid, e.comm, e.cmdline
}

// identify returns the process of thread tid and its filesystem uid and
// gid, for deciding whether it is a turn's agent: from the cache while
// the entry is fresh, with no system call at all.
func identify(tid uint32) (pid, fsuid, fsgid uint32) {
	now := time.Now()
	processes.Lock()
	if e, ok := processes.m[tid]; ok && now.Sub(e.at) < processTTL {
		processes.Unlock()
		return e.pid, e.fsuid, e.fsgid
	}
	processes.Unlock()
	e := lookupProcess(tid, now)
	return e.pid, e.fsuid, e.fsgid
}

// lookupProcess reads what the cache keeps of thread tid from /proc and
// caches it.
func lookupProcess(tid uint32, now time.Time) processEntry {
	e := readProcess(tid)
	fd, err := unix.Open("/proc/"+strconv.FormatUint(uint64(e.pid), 10)+"/comm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	} else if c, ok := readComm(fd); ok {
		e.comm = c // what the descriptor will say: the process may have exec'd since
	}
	e.cmdline = readCmdline(e.pid)
	e.fd, e.at = fd, now
	processes.Lock()
	if old, ok := processes.m[tid]; ok {
		closeEntry(old) // another request looked it up meanwhile
	} else if len(processes.m) >= maxProcesses {
		for _, e := range processes.m {
			closeEntry(e)
		}
		processes.m = map[uint32]processEntry{}
	}
	processes.m[tid] = e
	processes.Unlock()
	return e
}

// readComm reads a command name from an open /proc/PID/comm. The caller
// holds processes, so fd cannot be closed meanwhile.
func readComm(fd int) (string, bool) {
	if fd < 0 {
		return "", false
	}
	var buf [64]byte // TASK_COMM_LEN is 16
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil || n <= 0 {
		return "", false
	}
	return strings.TrimSuffix(string(buf[:n]), "\n"), true
}

func closeEntry(e processEntry) {
	if e.fd >= 0 {
		unix.Close(e.fd)
	}
}

// readProcess reads the process (Tgid) of thread tid, its name and its
// filesystem uid and gid (the fourth of the Uid and Gid lines: what
// FUSE reports of a request) from /proc/TID/status.
func readProcess(tid uint32) processEntry {
	e := processEntry{pid: tid, fd: -1}
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return e
	}
	fourth := func(v string) (uint32, bool) {
		f := strings.Fields(v)
		if len(f) < 4 {
			return 0, false
		}
		n, err := strconv.ParseUint(f[3], 10, 32)
		return uint32(n), err == nil
	}
	for _, line := range strings.SplitN(string(b), "\n", 12) {
		k, v, _ := strings.Cut(line, ":\t")
		switch k {
		case "Name":
			e.comm = v
		case "Tgid":
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
				e.pid = uint32(n)
			}
		case "Uid":
			if n, ok := fourth(v); ok {
				e.fsuid = n
			}
		case "Gid":
			if n, ok := fourth(v); ok {
				e.fsgid = n
			}
		}
	}
	if e.pid != tid {
		// A thread's name may differ from its process's.
		if b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(e.pid), 10) + "/comm"); err == nil {
			e.comm = strings.TrimSuffix(string(b), "\n")
		}
	}
	return e
}
