package agent

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// stat is what /proc/PID/stat says of a process that scopes need.
type stat struct {
	ppid  uint32
	start uint64 // clock ticks after boot
}

// readStat reads /proc/PID/stat.
func readStat(pid uint32) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return stat{}, false
	}
	return parseStat(b)
}

// parseStat parses a /proc/PID/stat line. The command name (field 2)
// is in parentheses and may hold anything, spaces and parentheses
// included: the fields after it start after its last ')'.
func parseStat(b []byte) (stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return stat{}, false
	}
	ppid, err1 := strconv.ParseUint(f[1], 10, 32)
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return stat{}, false
	}
	return stat{ppid: uint32(ppid), start: start}, true
}

// allStats reads /proc/PID/stat of every process.
func allStats() map[uint32]stat {
	out := map[uint32]stat{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil {
			continue
		}
		if st, ok := readStat(uint32(pid)); ok {
			out[uint32(pid)] = st
		}
	}
	return out
}

// readCgroup returns the cgroup v2 path of process pid, as the "0::"
// line of /proc/PID/cgroup gives it.
func readCgroup(pid uint32) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/cgroup")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, true
		}
	}
	return "", false
}
