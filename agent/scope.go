package agent

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/cowfs/cowfs/journal"
)

// Errors Resolve fails with: the harness named what is not there.
var (
	ErrNoProcess = errors.New("no such process")
	ErrNoCgroup  = errors.New("no such cgroup")
)

// Spec is a scope as a harness gives it: uids, pids and cgroup paths.
type Spec struct {
	Uids    []uint32
	Pids    []uint32
	Cgroups []string
}

// Empty reports whether the spec names nobody.
func (s Spec) Empty() bool { return len(s.Uids)+len(s.Pids)+len(s.Cgroups) == 0 }

// Resolve checks spec and returns the scope to store with a turn:
// each pid must be a live process (it is stored with its start time,
// and its descendants are followed from now on), each cgroup an
// existing cgroup v2 directory (stored as /proc/PID/cgroup writes it:
// a path under the cgroup2 mount is taken relative to it). An empty
// spec resolves to nil: every process is the agent.
func (t *Tracker) Resolve(spec Spec) (*journal.Scope, error) {
	if spec.Empty() {
		return nil, nil
	}
	s := &journal.Scope{Uids: slices.Clone(spec.Uids)}
	slices.Sort(s.Uids)
	s.Uids = slices.Compact(s.Uids)
	for _, c := range spec.Cgroups {
		p, err := cgroupPath(c)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(s.Cgroups, p) {
			s.Cgroups = append(s.Cgroups, p)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pid := range spec.Pids {
		st, ok := readStat(pid)
		if pid == 0 || !ok {
			return nil, fmt.Errorf("%w: %d", ErrNoProcess, pid)
		}
		p := journal.Process{Pid: pid, Start: st.start}
		if !slices.Contains(s.Pids, p) {
			s.Pids = append(s.Pids, p)
		}
	}
	for _, p := range s.Pids {
		t.follow(p)
	}
	if len(s.Cgroups) > 0 {
		t.listen()
		// A harness may have moved the agent just now: what was cached
		// of a process's cgroup before the turn does not count.
		clear(t.cgroups)
	}
	return s, nil
}

// Agent reports whether the process pid (a thread group id), whose
// filesystem uid is uid, is in scope s. A nil scope holds everyone; pid
// 0 (a process not known) is in a scope only by its uid.
func (t *Tracker) Agent(s *journal.Scope, pid, uid uint32) bool {
	if s.Empty() {
		return true
	}
	if slices.Contains(s.Uids, uid) {
		return true
	}
	if pid == 0 || len(s.Pids)+len(s.Cgroups) == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.listen()
	t.settle(pid)
	for _, root := range s.Pids {
		if t.descends(root, pid) {
			return true
		}
	}
	if len(s.Cgroups) == 0 {
		return false
	}
	cg, ok := t.cgroupOf(pid)
	if !ok {
		return false
	}
	for _, c := range s.Cgroups {
		if c == "/" || cg == c || strings.HasPrefix(cg, c+"/") {
			return true
		}
	}
	return false
}

// cgroupOf returns pid's cgroup v2 path, cached until it execs or
// exits (doc.go). The caller holds mu and has settled pid.
func (t *Tracker) cgroupOf(pid uint32) (string, bool) {
	now := time.Now()
	if e, ok := t.cgroups[pid]; ok && (t.conn != nil || now.Sub(e.at) < fallbackTTL) {
		return e.path, true
	}
	p, ok := readCgroup(pid)
	if !ok {
		return "", false
	}
	if len(t.cgroups) >= maxSettled {
		clear(t.cgroups)
	}
	t.cgroups[pid] = cgroupEntry{path: p, at: now}
	return p, true
}

// cgroupPath checks that c names an existing cgroup v2 directory and
// returns it as /proc/PID/cgroup writes it.
func cgroupPath(c string) (string, error) {
	if !strings.HasPrefix(c, "/") {
		return "", fmt.Errorf("%w: %q: a cgroup is an absolute path, as in /proc/PID/cgroup (e.g. /system.slice/agent.scope)", ErrNoCgroup, c)
	}
	c = path.Clean(c)
	mnt, ok := cgroup2Mount()
	if !ok {
		return "", fmt.Errorf("%w: %s: no cgroup v2 hierarchy is mounted", ErrNoCgroup, c)
	}
	rel := c
	if r, ok := strings.CutPrefix(c, mnt); ok && (r == "" || strings.HasPrefix(r, "/")) {
		rel = r
		if rel == "" {
			rel = "/"
		}
	}
	if !isDir(path.Join(mnt, rel)) {
		return "", fmt.Errorf("%w: %s (not a directory under the cgroup v2 hierarchy at %s)", ErrNoCgroup, c, mnt)
	}
	return rel, nil
}
