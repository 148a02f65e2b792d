package fs

import (
	"sync"
	"sync/atomic"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"

	"github.com/cowfs/cowfs/capture"
)

// Pages cached before a rollback rewrote a file.
//
// A rollback writes the backing file directly, behind the kernel's page
// cache, so the pages the kernel holds of the file still show the bytes
// the rollback replaced. Clean, they are only stale, and Mount.Flush
// drops them once the rollback has let go of the journal's gate. Dirty
// ones — a process wrote to the file through a shared writable mapping
// — the kernel writes back, as whole pages: the bytes the process wrote
// and, around them, the bytes it merely had cached. Written, they would
// put the rolled-back turn's bytes back over the restored file after
// the rollback reported it restored: a state the file never had.
//
// Pages dirtied before the rollback began are written back before it
// plans (rollback.Env.Writeback, FlushMappedWriteback): journaled as
// changes outside any turn, they are conflicts, and the file is skipped.
// A page dirtied after that flush still reaches the daemon later —
// dirtied before the restore, or after it and before the kernel drops
// its pages, since writing to a page already mapped writable tells
// nobody — as does one of a file the flush could not reach (its search
// of /proc gave up, or the file was mapped after it). The kernel hands a
// cached page to the daemon only as a writeback WRITE (FUSE_WRITE_CACHE);
// write(2) sends just the bytes written. So that is where stale pages
// are stopped:
//
//   - Under the exclusive gate, the rollback's observer marks each node
//     whose bytes or size it changed (Mount.Rewritten).
//   - A writeback WRITE on a marked node is refused with EIO, before
//     anything is journaled, unless every byte of it was read afresh
//     since the mark: its pages were cached before the restore. The
//     kernel drops the data and reports the error to the writer (at its
//     next msync or fsync); the refusal is noted for the rollback's
//     report (Mount.TakeRefused). The mark is set under the exclusive
//     gate and checked under the shared one, so a WRITE either ran
//     wholly before the rollback planned (and is a conflict) or sees it.
//   - A READ that began after the mark read the restored bytes: its range
//     is fresh, and the writeback of a page faulted in after the restore
//     and written to passes, an ordinary change after the rollback. A
//     READ that began earlier may have read the bytes being replaced,
//     and makes nothing fresh.
//   - Mount.Flush invalidates the node's pages: the kernel unmaps them,
//     writes back the dirty ones (launder_folio: WRITEs that meet the
//     mark), waits for writebacks in flight and drops every page. When
//     that returns, the kernel holds no page cached before the restore
//     (a page only comes back through a READ, after the mark), and the
//     mark goes. Flush runs before the rollback answers, so the report
//     names every write refused.
//
// The file therefore ends in a state it had: restored, then changed by
// at most writes made on pages read after the restore; or, for a write
// that reached the daemon before the plan, as that write left it, and
// skipped as a conflict. What is lost is a late write that shares a
// page with stale bytes, since the daemon cannot tell the bytes a
// process wrote from the bytes it had cached; its writer is told (EIO),
// and so is the user (the report's note). A writeback that mixes fresh
// and stale pages is refused whole.
type rewrites struct {
	n      atomic.Int32 // len(marked): READ and WRITE look no further while 0
	mu     sync.Mutex
	gen    uint64
	marked map[*gofs.Inode]*rewrite
	// refused are the writebacks refused since TakeRefused last took
	// them.
	refused []RefusedWrite
}

// rewrite is one node's mark.
type rewrite struct {
	gen   uint64         // which mark: a later step of the rollback marks again
	path  string         // as the rollback named it, for its report
	fresh capture.Ranges // read since the mark
}

// RefusedWrite is a writeback of pages cached before a rollback rewrote
// the file, refused (see rewrites).
type RefusedWrite struct {
	Path     string // as the rollback named it
	Off, Len int64
	Pid      uint32 // a process that maps the file (Node.writer), or 0
	Comm     string
}

// mark marks n, whose bytes or size a rollback changed at path.
func (r *rewrites) mark(n *gofs.Inode, path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.marked == nil {
		r.marked = map[*gofs.Inode]*rewrite{}
	}
	r.gen++
	r.marked[n] = &rewrite{gen: r.gen, path: path}
	r.n.Store(int32(len(r.marked)))
}

// markOf returns the generation of n's mark, or 0.
func (r *rewrites) markOf(n *gofs.Inode) uint64 {
	if r.n.Load() == 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.marked[n]; m != nil {
		return m.gen
	}
	return 0
}

// read notes that a READ of n that began under mark gen (markOf, before
// it read) read [lo, hi).
func (r *rewrites) read(n *gofs.Inode, gen uint64, lo, hi int64) {
	if gen == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.marked[n]; m != nil && m.gen == gen {
		m.fresh.Add(lo, hi)
	}
}

// stale reports whether a writeback of [lo, hi) of n may carry pages
// cached before a rollback rewrote it, and the path the rollback gave.
func (r *rewrites) stale(n *gofs.Inode, lo, hi int64) (string, bool) {
	if r.n.Load() == 0 {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.marked[n]
	if m == nil || len(m.fresh.Missing(lo, hi)) == 0 {
		return "", false
	}
	return m.path, true
}

// refuse notes a refused writeback.
func (r *rewrites) refuse(w RefusedWrite) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, w)
}

// dropped clears n's mark, if it is still mark gen: the kernel has
// dropped every page of n it held when the mark was set.
func (r *rewrites) dropped(n *gofs.Inode, gen uint64) {
	if gen == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.marked[n]; m != nil && m.gen == gen {
		delete(r.marked, n)
		r.n.Store(int32(len(r.marked)))
	}
}

// TakeRefused returns the writebacks refused since the last call (see
// rewrites): after a rollback and its Flush, every one refused for it.
func (m *Mount) TakeRefused() []RefusedWrite {
	r := &m.root.fs.rewrites
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.refused
	r.refused = nil
	return out
}

// refuseStale refuses the writeback of [lo, hi) of n if it may carry
// pages cached before a rollback rewrote the file (see rewrites). The
// caller holds the gate (its change c).
func (n *Node) refuseStale(c *change, lo, hi int64) bool {
	path, stale := n.fs.rewrites.stale(n.EmbeddedInode(), lo, hi)
	if !stale {
		return false
	}
	who := c.caller.get()
	n.fs.rewrites.refuse(RefusedWrite{Path: path, Off: lo, Len: hi - lo, Pid: who.Pid, Comm: who.Comm})
	return true
}
