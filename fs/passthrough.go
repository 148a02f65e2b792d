package fs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
)

// Passthrough: the kernel reads and writes a file the epoch created
// itself, on the backing file, without a round trip (FUSE passthrough).
// Such a file has no pre-image to keep: undo deletes it. See the
// package doc ("Files the epoch created") for why no byte of a later
// epoch escapes the journal.
//
// Only CREATE hands out a backing file: the open that creates the file
// (open with O_CREAT of a name that does not exist). Opens stay unseen
// (io.go), so a later open of the same file goes through the daemon as
// before. Each such file stays in the live set until no writer of its
// backing inode remains: no handle the kernel has not released, and no
// writable open of the inode at all (a shared writable mapping holds
// one after its descriptor is closed), which a read lease tells
// (writersRemain). At every boundary (Mount.EpochBegan), a live file
// still written is captured whole, as its pre-image in the new epoch.

// passthrough is the mount's passthrough state.
type passthrough struct {
	// state: ptProbing until the mount has checked that the kernel
	// takes backing files (Mount.probePassthrough), then ptOn or ptOff.
	state atomic.Int32
	ready chan struct{} // closed once state is not ptProbing
	mu    sync.Mutex
	live  map[*Node]*liveFile
	// adopted are files a dead mount's passthrough opens may write
	// (adopt.go).
	adopted map[uint64]adopted
}

const (
	ptProbing int32 = iota
	ptOn
	ptOff
)

// liveFile is a file the kernel may write without the daemon.
type liveFile struct {
	opens   int         // passthrough handles not released
	creator fuse.Caller // who created it: a capture is journaled as theirs
}

// declines says whether CREATE is declined (ENOSYS), as without
// passthrough: the kernel then creates files with MKNOD.
func (p *passthrough) declines() bool {
	p.decided()
	return p.state.Load() == ptOff
}

// decided waits until the mount has probed: an answer to OPEN or
// CREATE given before would bind the kernel for good.
func (p *passthrough) decided() {
	if p.state.Load() == ptProbing {
		<-p.ready
	}
}

func (p *passthrough) on() bool { return p.state.Load() == ptOn }

var _ = (gofs.NodeCreater)((*Node)(nil))

// Create creates a regular file and opens it. With passthrough off it
// declines, as Open does (io.go): the kernel then makes the file with
// MKNOD and opens it without asking, so a creation is one kind of
// request, and a name made behind the mount's back is answered in one
// place (make). With passthrough on, the new file is created the same
// way (make: journaled, as the caller, ESTALE for a stale negative
// entry) and the open is given the backing file, if the creator is the
// turn's agent; otherwise it gets no handle and is read and written
// through the daemon. Once CREATE has been answered it is never
// declined: the kernel would stop sending it for good. The kernel skips
// the permission check on opening a file the same call created, so a
// file created read-only is still writable through that descriptor, as
// natively.
func (n *Node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	p := &n.fs.pass
	if p.declines() {
		return nil, nil, 0, syscall.ENOSYS
	}
	ch, agent, e := n.makeAs(ctx, name, syscall.S_IFREG, mode, out, func(dir int, perm uint32) error {
		return unix.Mknodat(dir, name, syscall.S_IFREG|perm, 0)
	})
	if e != 0 {
		return nil, nil, 0, e
	}
	cn, ok := ch.Operations().(*Node)
	if !ok {
		return ch, nil, n.openFlags(fuse.FOPEN_NOFLUSH), 0
	}
	if !agent || !p.on() || !passableMode(out.Attr.Mode) {
		return ch, &handle{n: cn, fd: -1}, n.openFlags(fuse.FOPEN_NOFLUSH), 0
	}
	// The kernel opens the backing file anew with the caller's open
	// flags; this descriptor only names it.
	fd, e := n.openChild(name, cn)
	if e != 0 {
		return ch, &handle{n: cn, fd: -1}, n.openFlags(fuse.FOPEN_NOFLUSH), 0
	}
	p.opened(cn, callerOf(ctx))
	return ch, &handle{n: cn, want: true, counted: true, fd: fd}, fuse.FOPEN_NOFLUSH, 0
}

func callerOf(ctx context.Context) fuse.Caller {
	if fc, ok := fuse.FromContext(ctx); ok {
		return *fc
	}
	return fuse.Caller{}
}

// passable reports whether the kernel may write n's backing file itself
// as well as the daemon would: it does so with the daemon's
// credentials, and on a file opened without the checks of open(2). So
// not a file whose set-id bits a write by another user would clear
// (file_remove_privs spares a writer with CAP_FSETID), nor one the
// backing filesystem marks append-only or immutable (which open(2)
// enforces, not write(2)).
func (n *Node) passable() bool {
	fd, done, e := n.inode()
	if e != 0 {
		return false
	}
	defer done()
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MODE, &stx); err != nil {
		return false
	}
	return passableMode(uint32(stx.Mode)) && stx.Attributes&(unix.STATX_ATTR_APPEND|unix.STATX_ATTR_IMMUTABLE) == 0
}

// passableMode reports whether a write by another user would leave mode
// as it is: no set-user-ID bit, no set-group-ID bit with group execute.
func passableMode(mode uint32) bool {
	return mode&syscall.S_ISUID == 0 && mode&(syscall.S_ISGID|syscall.S_IXGRP) != syscall.S_ISGID|syscall.S_IXGRP
}

// tmpHandle is the handle of an O_TMPFILE open of n, made by the turn's
// agent or not: with passthrough on, it is served as an open of a file
// created in the epoch; otherwise there is none.
func (n *Node) tmpHandle(ctx context.Context, agent bool) gofs.FileHandle {
	p := &n.fs.pass
	if p.declines() {
		return nil
	}
	want := agent && n.passable()
	h := &handle{n: n, fd: -1, want: want, counted: want}
	if want {
		p.opened(n, callerOf(ctx))
	}
	return h
}

// open answers an OPEN of n with passthrough on: a handle that wants
// the backing file if n was created in this epoch by the turn's agent
// (or outside a turn), and counts in n's live entry if it wants it or n
// has one (its backing file may still be in the kernel's hands). For a
// file created in the epoch the journal's gate is held from the check
// to the count, so a boundary comes either before (the check sees the
// new epoch) or after (its capture sees the entry).
func (n *Node) openHandle(ctx context.Context) (gofs.FileHandle, uint32) {
	p := &n.fs.pass
	h := &handle{n: n, fd: -1}
	if n.typ() != syscall.S_IFREG {
		return h, n.openFlags(fuse.FOPEN_NOFLUSH)
	}
	r, ino := n.fs.rec, n.StableAttr().Ino
	// Most opens are of files created before the epoch, known without
	// the gate (a creation is noted before the kernel knows the
	// inode), so they do not wait while a rollback or a boundary holds
	// it.
	// passable opens n's descriptor (its lock) before the gate, in the
	// order every request takes them.
	if r.createdIn(0, ino) && n.passable() {
		g := r.j.Enter()
		defer g.Leave()
		h.want = r.createdIn(g.Epoch, ino)
	}
	p.mu.Lock()
	_, live := p.live[n]
	p.mu.Unlock()
	if h.want || live {
		h.counted = true
		p.opened(n, callerOf(ctx))
	}
	return h, n.openFlags(fuse.FOPEN_NOFLUSH)
}

// openChild opens name in directory n read-only, never following a
// symlink, and checks that it is ch's inode: go-fuse links a created
// node into its tree only after Create returns, so ch.open cannot find
// it yet.
func (n *Node) openChild(name string, ch *Node) (int, syscall.Errno) {
	dir, done, e := n.inode()
	if e != 0 {
		return -1, e
	}
	defer done()
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errno(err)
	}
	st, err := backing.Fstat(fd)
	if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || n.idOf(st) != ch.StableAttr().Ino {
		unix.Close(fd)
		return -1, syscall.ESTALE
	}
	return fd, 0
}

// opened notes a passthrough handle of n.
func (p *passthrough) opened(n *Node, creator fuse.Caller) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live == nil {
		p.live = map[*Node]*liveFile{}
	}
	lf := p.live[n]
	if lf == nil {
		lf = &liveFile{creator: creator}
		p.live[n] = lf
	}
	lf.opens++
}

// released notes that the kernel released a passthrough handle of n.
// The inode is stamped (rescan: its writes were the mount's), and once
// no writer remains it leaves the live set.
func (p *passthrough) released(n *Node) {
	n.fs.rec.stampNow(n.StableAttr().Ino)
	p.mu.Lock()
	lf := p.live[n]
	if lf == nil {
		p.mu.Unlock()
		return
	}
	lf.opens--
	last := lf.opens == 0
	p.mu.Unlock()
	if last && !n.writersRemain() {
		p.mu.Lock()
		if lf.opens == 0 {
			delete(p.live, n)
		}
		p.mu.Unlock()
	}
}

// handle is a file handle: the kernel sends opens when passthrough is
// on (Node.Open). It gives the kernel n's backing file if n wants it
// (created in the epoch), and counts in n's live entry if it may be
// served with one (counted); go-fuse's bridge hands the kernel the
// backing file it registered for n while any of n's handles holds it,
// whatever PassthroughFd says, since the kernel refuses an open that
// is not in the mode of the inode's other opens.
type handle struct {
	n       *Node
	want    bool
	counted bool
	fd      int // names the backing file for the kernel; -1: not opened
}

var _ = (gofs.FilePassthroughFder)((*handle)(nil))

func (h *handle) PassthroughFd() (int, bool) {
	if !h.want {
		return -1, false
	}
	if h.fd < 0 {
		fd, e := h.n.open(syscall.O_RDONLY)
		if e != 0 {
			return -1, false
		}
		h.fd = fd
	}
	return h.fd, true
}

var _ = (gofs.FileReleaser)((*handle)(nil))

func (h *handle) Release(ctx context.Context) syscall.Errno {
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
	if h.counted {
		h.n.fs.pass.released(h.n)
	}
	return 0
}

// writersRemain reports whether any writable open of n's backing inode
// may remain: a descriptor, or a shared writable mapping (which holds
// its file open). A read lease is granted only on an inode nobody has
// open for writing (fcntl F_SETLEASE, F_RDLCK; the daemon has
// CAP_LEASE); it is given back at once. When the inode cannot be
// opened (it has no name left), nothing of the workspace can be written
// through it.
func (n *Node) writersRemain() bool {
	n.dropKeptWriter()
	fd, e := n.open(syscall.O_RDONLY)
	if e != 0 {
		return false
	}
	defer unix.Close(fd)
	return writersOf(fd)
}

// writersOf reports whether the inode of fd, open read-only, may be
// open for writing anywhere (writersRemain).
func writersOf(fd int) bool {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		return true // EAGAIN: open for writing; anything else: assume so
	}
	unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	return false
}

// dropKeptWriter closes the writable descriptor the daemon keeps of n
// (iofd.go), if any: it is no writer the kernel could write through.
func (n *Node) dropKeptWriter() {
	// Never waits: a pending lock would stop requests that hold the
	// journal's gate from taking n's descriptor. A writer kept busy
	// counts, and the file is captured.
	if !n.fd.mu.TryLock() {
		return
	}
	defer n.fd.mu.Unlock()
	if n.fd.io.open && n.fd.io.mode == syscall.O_RDWR {
		n.fd.io.close()
	}
}

// captureLive journals, in the epoch that has just begun, the whole
// content of every file of the live set that may still be written, and
// lets go of the others: what a writer still holding a backing file
// writes from now on changes bytes whose pre-image is journaled.
func (p *passthrough) captureLive(log func(msg string, args ...any)) {
	p.mu.Lock()
	type entry struct {
		n  *Node
		lf *liveFile
	}
	var all []entry
	for n, lf := range p.live {
		all = append(all, entry{n, lf})
	}
	p.mu.Unlock()
	for _, e := range all {
		// The kernel's own count of writers, not the handles: the
		// kernel releases a handle after close(2) has returned.
		if !e.n.writersRemain() {
			p.mu.Lock()
			if e.lf.opens == 0 {
				delete(p.live, e.n)
			}
			p.mu.Unlock()
			continue
		}
		if err := e.n.captureWhole(e.lf.creator); err != nil {
			log("cannot capture a file still open for writing at the boundary", "ino", e.n.StableAttr().Ino, "err", err)
		}
	}
}

// captureWhole journals n's attributes and all its bytes in the current
// epoch, as a change by creator.
func (n *Node) captureWhole(creator fuse.Caller) error {
	rel, ok := n.rel()
	if !ok || aside.Private(rel) {
		return nil // no name in the workspace: nothing to restore
	}
	fd, e := n.open(syscall.O_RDONLY)
	if e != 0 {
		if errors.Is(e, syscall.ENOENT) {
			return nil
		}
		return e
	}
	defer unix.Close(fd)
	return n.fs.captureAt(creator, rel, n.StableAttr().Ino, fd)
}

// saveWhole journals, in change c, the attributes (stat st) and all the
// bytes of the file at rel (identity id, open as fd), as far as the
// epoch has not journaled them.
func (fs *filesystem) saveWhole(c *change, rel string, id uint64, fd int, st *unix.Stat_t) error {
	s := c.state(id)
	defer s.Unlock()
	if err := c.op.Attr(s, id, rel, st, journal.CauseWrite); err != nil {
		return err
	}
	return c.op.Data(s, id, rel, capture.Opened(capture.File(fd)), 0, st.Size)
}

// stampLive adds to stamps the present for every file of the live set:
// what the kernel wrote to them without the daemon was the mount's.
func (p *passthrough) stampLive(stamps map[uint64]int64) map[uint64]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.live) == 0 && len(p.adopted) == 0 {
		return stamps
	}
	if stamps == nil {
		stamps = map[uint64]int64{}
	}
	now := time.Now().UnixNano()
	for n := range p.live {
		stamps[n.StableAttr().Ino] = now
	}
	for id := range p.adopted {
		stamps[id] = now
	}
	return stamps
}

// probePassthrough checks that the kernel takes backing files from this
// daemon (root, a kernel with FUSE passthrough, a backing filesystem it
// can stack on), with a file in no directory, and turns passthrough on
// or off for good.
func (m *Mount) probePassthrough(want bool, log func(msg string, args ...any)) {
	p := &m.root.fs.pass
	defer close(p.ready)
	if !want {
		p.state.Store(ptOff)
		return
	}
	fd, err := unix.Openat(m.root.fs.root, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		defer unix.Close(fd)
		var id int32
		var e syscall.Errno
		id, e = m.server.RegisterBackingFd(&fuse.BackingMap{Fd: int32(fd)})
		if e == 0 {
			m.server.UnregisterBackingFd(id)
			p.state.Store(ptOn)
			return
		}
		err = e
	}
	log("files the epoch creates go through the daemon: the kernel takes no backing file", "err", err)
	p.state.Store(ptOff)
}
