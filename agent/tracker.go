package agent

import (
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
)

// Tracker follows the processes scopes name (doc.go). One serves a
// daemon; its methods may be called from any goroutine.
type Tracker struct {
	log *slog.Logger

	mu     sync.Mutex
	conn   *connector // nil before the first scope that needs it, or if it cannot be had
	tried  bool       // conn was tried
	wake   int        // eventfd that ends the reader; -1 until it runs
	done   chan struct{}
	closed bool

	// trees are the followed processes' live descendants, by process.
	trees map[journal.Process]*tree
	// settled are the processes whose events have all been applied
	// since they were first asked about (with the connector): their
	// answers stand until they exit.
	settled map[uint32]struct{}
	// cgroups caches each process's cgroup, until it execs or exits
	// (with the connector) or for fallbackTTL (without).
	cgroups map[uint32]cgroupEntry
}

// tree is a followed process and its live descendants.
type tree struct {
	members map[uint32]member
	used    time.Time // for dropping the least used past maxTrees
}

// member is a process in a tree: its start time, and when the
// fallback last confirmed it (the connector needs no confirming).
type member struct {
	start   uint64
	checked time.Time
}

type cgroupEntry struct {
	path string
	at   time.Time
}

const (
	// maxTrees bounds the processes followed at once: a harness names
	// one or a few; past this, the least recently asked about goes.
	maxTrees = 64
	// fallbackTTL is how long an answer found without the connector
	// (a walk up the parent chain) is kept: a pid can be reused once
	// its process is gone, which nothing then reports.
	fallbackTTL = 100 * time.Millisecond
	// maxSettled bounds the processes remembered as settled; past it
	// the map starts again (each process then reads the socket once
	// more).
	maxSettled = 1 << 16
	// readerBatch is how long the reader lets events gather in the
	// socket (rcvBuf holds some thousands) before it reads them again.
	readerBatch = 10 * time.Millisecond
)

// NewTracker returns a Tracker; it opens nothing until a scope needs
// it. log may be nil.
func NewTracker(log *slog.Logger) *Tracker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tracker{log: log, wake: -1, trees: map[journal.Process]*tree{},
		settled: map[uint32]struct{}{}, cgroups: map[uint32]cgroupEntry{}}
}

// Close stops following processes.
func (t *Tracker) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	if t.wake >= 0 {
		unix.Write(t.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
	done := t.done
	t.mu.Unlock()
	if done != nil {
		<-done
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != nil {
		t.conn.close()
		t.conn = nil
	}
	if t.wake >= 0 {
		unix.Close(t.wake)
		t.wake = -1
	}
}

// Following reports whether process events are followed through the
// connector (false: the fallback, doc.go).
func (t *Tracker) Following() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.listen()
	return t.conn != nil
}

// listen subscribes to process events once, and starts the reader.
// The caller holds mu.
func (t *Tracker) listen() {
	if t.tried || t.closed {
		return
	}
	t.tried = true
	c, err := openConnector()
	if err != nil {
		t.log.Warn("cannot follow process events; an agent's processes are found by their parents instead, and a daemon it leaves behind is not the agent's", "err", err)
		return
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		c.close()
		t.log.Warn("cannot follow process events", "err", err)
		return
	}
	t.conn, t.wake, t.done = c, wake, make(chan struct{})
	go t.reader(c.fd, wake, t.done)
}

// reader applies events as they come, so the socket does not overflow
// between questions. It reads them in batches, at most every
// readerBatch: the events are every process's on the machine (a
// parallel build forks thousands a second), and a question never
// waits for the reader — it reads what is queued itself (settle).
func (t *Tracker) reader(fd, wake int, done chan struct{}) {
	defer close(done)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			t.log.Warn("process events: poll", "err", err)
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		t.mu.Lock()
		t.drain()
		t.mu.Unlock()
		// Let a batch gather, unless told to stop.
		if n, _ := unix.Poll(fds[1:], int(readerBatch/time.Millisecond)); n > 0 {
			return
		}
	}
}

// drain applies every event queued now. The caller holds mu.
func (t *Tracker) drain() {
	if t.conn == nil {
		return
	}
	err := t.conn.read(t.apply)
	if err == errLost {
		t.log.Warn("process events were lost; walking the agents' processes again (one re-parented meanwhile is not found)")
		t.resync()
	} else if err != nil {
		t.log.Warn("process events", "err", err)
	}
}

// apply updates the trees and caches for one event. The caller holds mu.
func (t *Tracker) apply(e event) {
	switch e.what {
	case procEventFork:
		if e.pid != e.tgid {
			return // a thread
		}
		delete(t.settled, e.tgid)
		delete(t.cgroups, e.tgid)
		var start uint64
		read := false
		for _, tr := range t.trees {
			if _, ok := tr.members[e.parent]; !ok {
				continue
			}
			if !read {
				st, _ := readStat(e.tgid) // gone already: its exit follows
				start, read = st.start, true
			}
			tr.members[e.tgid] = member{start: start}
		}
	case procEventExec:
		delete(t.cgroups, e.tgid)
	case procEventExit:
		if e.pid != e.tgid {
			return // a thread; the process lives on
		}
		delete(t.settled, e.tgid)
		delete(t.cgroups, e.tgid)
		for _, tr := range t.trees {
			delete(tr.members, e.tgid)
		}
	}
}

// resync walks every tree again after events were lost: members still
// alive (the same start time) stay, descendants found by their parents
// join. The caller holds mu.
func (t *Tracker) resync() {
	stats := allStats()
	for root, tr := range t.trees {
		for pid, m := range tr.members {
			if st, ok := stats[pid]; !ok || st.start != m.start {
				delete(tr.members, pid)
			}
		}
		for pid, m := range walk(root, stats) {
			tr.members[pid] = m
		}
	}
	clear(t.settled)
	clear(t.cgroups)
}

// follow returns root's tree, making it if it is new: the connector is
// subscribed first, then /proc walked, then the events queued
// meanwhile applied, so no fork falls between the walk and the events.
// The caller holds mu.
func (t *Tracker) follow(root journal.Process) *tree {
	if tr, ok := t.trees[root]; ok {
		tr.used = time.Now()
		return tr
	}
	t.listen()
	if len(t.trees) >= maxTrees {
		var oldest journal.Process
		var at time.Time
		for r, tr := range t.trees {
			if at.IsZero() || tr.used.Before(at) {
				oldest, at = r, tr.used
			}
		}
		delete(t.trees, oldest)
	}
	tr := &tree{members: walk(root, allStats()), used: time.Now()}
	t.trees[root] = tr
	t.drain()
	return tr
}

// walk returns root and its descendants by parent pid, if root is still
// the process it names.
func walk(root journal.Process, stats map[uint32]stat) map[uint32]member {
	out := map[uint32]member{}
	if st, ok := stats[root.Pid]; !ok || st.start != root.Start {
		return out
	}
	children := map[uint32][]uint32{}
	for pid, st := range stats {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	now := time.Now()
	queue := []uint32{root.Pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if _, seen := out[p]; seen {
			continue
		}
		out[p] = member{start: stats[p].start, checked: now}
		queue = append(queue, children[p]...)
	}
	return out
}

// settle makes sure every event about pid that happened before this
// call has been applied. With the connector that is true once the
// socket has been read after pid's first request (doc.go); without, a
// pid is checked afresh by the caller. The caller holds mu.
func (t *Tracker) settle(pid uint32) {
	if t.conn == nil {
		return
	}
	if _, ok := t.settled[pid]; ok {
		return
	}
	t.drain()
	if len(t.settled) >= maxSettled {
		clear(t.settled)
	}
	t.settled[pid] = struct{}{}
}

// descends reports whether pid is root or descends from it. The caller
// holds mu and has settled pid.
func (t *Tracker) descends(root journal.Process, pid uint32) bool {
	tr := t.follow(root)
	m, ok := tr.members[pid]
	if t.conn != nil {
		return ok
	}
	// Without events: a member confirmed a moment ago stands; any other
	// process is walked up its parent chain, each step's start time
	// checked against the members known, so a reused pid is not taken
	// for a member.
	now := time.Now()
	if ok && now.Sub(m.checked) < fallbackTTL {
		return true
	}
	var chain []uint32
	var starts []uint64
	for p, steps := pid, 0; p > 1 && steps < 4096; steps++ {
		st, ok := readStat(p)
		if !ok {
			break
		}
		if m, ok := tr.members[p]; ok && m.start == st.start {
			for i, q := range chain {
				tr.members[q] = member{start: starts[i], checked: now}
			}
			tr.members[p] = member{start: st.start, checked: now}
			return true
		}
		chain, starts = append(chain, p), append(starts, st.start)
		p = st.ppid
	}
	delete(tr.members, pid)
	return false
}
