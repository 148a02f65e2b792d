package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Suites that say what a workload cost the FUSE daemon rather than how
// long it took: its CPU time, and (for cowfs, which counts them) the
// FUSE requests it served. Requests are the regression guard: a change
// that adds round trips shows up here even when the timings are noisy.
const (
	suiteCPU      = "daemon CPU"
	suiteRequests = "FUSE requests"
)

// usage is what a daemon has done so far.
type usage struct {
	cpuNs    int64             // CPU time of all its threads; -1 if unknown
	requests map[string]uint64 // nil if not counted
}

// sample reads what t's daemon has done so far. Asking for the
// request counts costs the daemon CPU time, so a sample taken before a
// workload asks first and reads the CPU time after (start), one taken
// after reads the CPU time first (end).
func sample(t target, start bool) usage {
	u := usage{cpuNs: -1}
	pid := t.daemon()
	if pid == 0 {
		return u
	}
	if start {
		u.requests = t.requests()
	}
	u.cpuNs = cpuTime(pid)
	if !start {
		u.requests = t.requests()
	}
	return u
}

// since records what the daemon did between before and u, for workload
// w on target tn.
func (u usage) since(before usage, r *results, w, tn string, run int) {
	if u.cpuNs >= 0 && before.cpuNs >= 0 {
		r.add(suiteCPU, w, tn, run, float64(u.cpuNs-before.cpuNs)/1e6, "ms")
	}
	if u.requests == nil || before.requests == nil {
		return
	}
	ops := map[string]uint64{}
	var total uint64
	for op, n := range u.requests {
		if d := n - before.requests[op]; d > 0 {
			ops[op] = d
			total += d
		}
	}
	r.Measurements = append(r.Measurements, measurement{Suite: suiteRequests, Workload: w, Target: tn,
		Run: run, Value: float64(total), Unit: "req", Ops: ops})
}

// cpuTime returns the CPU time, in ns, that the threads of process pid
// have run (the sum of their /proc schedstat run times; a thread that
// has exited no longer counts, which for a Go daemon is rare), or -1.
func cpuTime(pid int) int64 {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		return -1
	}
	var sum int64
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += ns
	}
	return sum
}
