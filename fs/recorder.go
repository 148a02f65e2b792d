package fs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/cowfs/cowfs/internal/_gofuse/fuse"

	"github.com/cowfs/cowfs/agent"
	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
)

// recorder is the one way changes reach the journal. Every mutating FUSE
// method opens a change with begin, records what its operation is about
// to destroy through the change's capture.Op — the FUSE layer's one
// path to Journal.Append — and performs the operation only if that
// succeeded. The change holds the journal's gate until it ends, so the
// operation lands in the same turn as its record and a rollback never
// runs between the two.
type recorder struct {
	j     Journal
	aside *aside.Area
	log   *slog.Logger
	// agents says which processes are a turn's agent (agent.go); nil:
	// every process is.
	agents *agent.Tracker

	// inodes is what the current epoch journaled of each inode for the
	// turn's agent, and others for processes outside its scope: each
	// journals its own pre-images, so a change of either always leaves
	// a record of its own (agent.go).
	inodes, others capture.Set

	mu sync.Mutex
	// stamps says when the mount last changed each inode (Unix
	// nanoseconds, taken after the change reached the backing
	// directory), since package rescan last took them: an inode whose
	// ctime is later was changed again outside the mount.
	stamps map[uint64]int64
}

func newRecorder(j Journal, a *aside.Area, log *slog.Logger) *recorder {
	return &recorder{j: j, aside: a, log: log}
}

// change is one mutating request in flight.
type change struct {
	r *recorder
	// op appends the change's records, under the gate it holds, and
	// withdraws them if the operation fails (withdraw.go).
	op      capture.Op
	caller  *who
	touched []uint64 // inodes it changes (state was asked for)
	// landed: the operation reached the backing directory, at least in
	// part, so its records stay (withdraw.go).
	landed bool
	// outside says whether the caller is outside the turn's agent
	// scope: 0 not asked yet, 1 no (the agent's, or no scope), 2 yes.
	outside uint8
}

// who is the process behind a request. FUSE reports the calling thread;
// the process and its command name are looked up in /proc only when a
// record needs them, which most requests (writes to new files, say)
// never do.
type who struct {
	raw journal.Caller // Pid is the thread id
	// find, if set, names the process behind a request with pid 0 (a
	// flush of a shared mapping), or returns 0.
	find func() uint32

	tidOnce sync.Once
	tid     uint32 // raw.Pid, or for pid 0 what find found
	once    sync.Once
	res     journal.Caller
}

func whoOf(ctx context.Context) *who {
	w := &who{}
	if fc, ok := fuse.FromContext(ctx); ok {
		w.raw = journal.Caller{Pid: fc.Pid, Uid: fc.Uid, Gid: fc.Gid}
	}
	return w
}

// thread returns the thread behind the request: the one FUSE reported,
// or for a request with pid 0 a thread of a process that maps the file
// (found once), or 0.
func (w *who) thread() uint32 {
	w.tidOnce.Do(func() {
		w.tid = w.raw.Pid
		if w.tid == 0 && w.find != nil {
			w.tid = w.find()
		}
	})
	return w.tid
}

// get returns the process, resolved at the first call. For a request
// with pid 0, the uid and gid are those of the process found mapping
// the file (the kernel's own are no one's).
func (w *who) get() journal.Caller {
	w.once.Do(func() {
		w.res = w.raw
		if tid := w.thread(); tid != 0 {
			w.res.Pid, w.res.Comm, w.res.Cmdline = process(tid)
			if w.raw.Pid == 0 {
				_, w.res.Uid, w.res.Gid = identify(tid)
			}
		}
	})
	return w.res
}

// ident returns the process and filesystem uid that decide whether the
// request is an agent's: from the request and the process cache, with
// no system call while the cache holds the thread. A flush of a shared
// mapping that no process explains is nobody's: pid 0 and a uid no
// process has ((uid_t)-1), so no scope holds it.
func (w *who) ident() (pid, uid uint32) {
	tid := w.thread()
	if tid == 0 {
		return 0, ^uint32(0)
	}
	pid, fsuid, _ := identify(tid)
	if w.raw.Pid == 0 {
		return pid, fsuid
	}
	return pid, w.raw.Uid
}

// begin opens a change for the request in ctx. pid0 names who is behind
// it if the kernel sent it with pid 0 (a flush of a shared mapping:
// Node.writer).
func (r *recorder) begin(ctx context.Context, pid0 *who) *change {
	c := &change{r: r, caller: whoOf(ctx)}
	if c.caller.raw.Pid == 0 && pid0 != nil {
		c.caller = pid0
	}
	c.op = capture.Op{Journal: r.j, Gate: r.j.Enter(), By: c, Log: r.log}
	return c
}

// who is the caller's identity, for acting with its credentials.
func (c *change) who() caller {
	r := c.caller.raw
	return caller{uid: r.Uid, gid: r.Gid, tid: r.Pid}
}

// end closes the change; its operation has reached the backing directory
// (or failed). The inodes it changed are stamped first, while the gate
// still keeps a rescan out.
func (c *change) end() {
	if len(c.touched) > 0 {
		now := time.Now().UnixNano()
		c.r.mu.Lock()
		if c.r.stamps == nil {
			c.r.stamps = map[uint64]int64{}
		}
		for _, ino := range c.touched {
			c.r.stamps[ino] = now
		}
		c.r.mu.Unlock()
	}
	c.op.Gate.Leave()
}

// stamp notes that the change changes inode ino (its ctime, at least)
// without asking for its state: renames and links.
func (c *change) stamp(ino uint64) { c.touched = append(c.touched, ino) }

// stampNow notes that the mount changed inode ino up to now (a file the
// kernel wrote itself: passthrough.go).
func (r *recorder) stampNow(ino uint64) {
	now := time.Now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stamps == nil {
		r.stamps = map[uint64]int64{}
	}
	r.stamps[ino] = now
}

// takeStamps returns the stamps since the last call, and forgets them.
func (r *recorder) takeStamps() map[uint64]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stamps
	r.stamps = nil
	return s
}

// record journals rec — with the bytes rec.Off..rec.Off+rec.Len of src
// for KindData — before the operation that needs it. The operation must
// not be performed if record fails: fail closed, never unrecorded.
func (c *change) record(rec *journal.Record, src io.ReaderAt) error {
	return c.op.Record(rec, src)
}

// Label marks each record of the change with its caller, and whether
// the caller is outside the turn's agent (capture.Author).
func (c *change) Label(rec *journal.Record) {
	rec.Caller = c.caller.get()
	rec.NotAgent = c.notAgent()
}

// state returns the epoch's state of inode ino, locked: the agent's, or
// the others' (agent.go). The caller unlocks it.
func (c *change) state(ino uint64) *capture.State {
	c.touched = append(c.touched, ino)
	set := &c.r.inodes
	if c.notAgent() {
		set = &c.r.others
	}
	return c.op.Take(set, ino)
}

// forgetEpoch lets go of what an epoch that has ended journaled, which
// would otherwise be held until the next change. The caller has seen
// epoch begin.
func (r *recorder) forgetEpoch(epoch uint64) {
	r.inodes.Forget(epoch)
	r.others.Forget(epoch)
}

// createdIn reports whether the turn's agent (or anyone, outside a turn
// or with no agent scope) created ino in epoch, the gate's; with epoch
// 0, in whatever epoch the recorder's state is of, without the gate.
func (r *recorder) createdIn(epoch, ino uint64) bool {
	return r.inodes.Created(epoch, ino)
}

// markCreated notes that ino was created in this epoch.
func (c *change) markCreated(ino uint64) {
	s := c.state(ino)
	s.SetCreated()
	s.Unlock()
}

// dirent journals the attributes of directory id (descriptor dir, at
// rel relative to the backing root) before its first entry change in
// this epoch, so undo can put its times back.
func (c *change) dirent(id uint64, dir int, rel string) error {
	s := c.state(id)
	defer s.Unlock()
	return c.op.Dirent(s, id, rel, dir)
}

// errno converts an error to the errno FUSE returns. go-fuse's ToErrno
// does not unwrap, so this does.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, journal.ErrUnusable) {
		return syscall.EIO // not the errno of why: the writer's file is fine
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, journal.ErrClosed) {
		return syscall.EROFS
	}
	return syscall.EIO
}
