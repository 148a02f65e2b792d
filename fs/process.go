package fs

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// processes caches process() for a moment: a command making many
// changes in a row (rm -rf, tar) is looked up once, not for every
// change. An exec within processTTL of a change may be attributed to
// the command it replaced.
var processes = struct {
	sync.Mutex
	m map[uint32]processEntry
}{m: map[uint32]processEntry{}}

type processEntry struct {
	pid  uint32
	comm string
	at   time.Time
}

const processTTL = 100 * time.Millisecond

// maxCachedThreads bounds the per-thread caches (processes here, groups
// in creds.go): past it a cache starts again empty, so a build that
// runs through thousands of short-lived threads does not grow it.
const maxCachedThreads = 4096

// process returns the process (thread group) of thread tid — FUSE
// reports the calling thread — and its command name, /proc/PID/comm at
// the time of the request (give or take processTTL).
func process(tid uint32) (uint32, string) {
	now := time.Now()
	processes.Lock()
	e, ok := processes.m[tid]
	processes.Unlock()
	if ok && now.Sub(e.at) < processTTL {
		return e.pid, e.comm
	}
	pid, comm := readProcess(tid)
	processes.Lock()
	if len(processes.m) > maxCachedThreads {
		processes.m = map[uint32]processEntry{}
	}
	processes.m[tid] = processEntry{pid, comm, now}
	processes.Unlock()
	return pid, comm
}

func readProcess(tid uint32) (uint32, string) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return tid, ""
	}
	var name string
	pid := tid
	for _, line := range strings.SplitN(string(b), "\n", 8) {
		k, v, _ := strings.Cut(line, ":\t")
		switch k {
		case "Name":
			name = v
		case "Tgid":
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
				pid = uint32(n)
			}
		}
	}
	if pid != tid {
		// A thread's name may differ from its process's.
		if b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm"); err == nil {
			name = strings.TrimSuffix(string(b), "\n")
		}
	}
	return pid, name
}
