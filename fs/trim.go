package fs

import (
	"slices"
	"sync"
	"time"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
)

// The kernel keeps an inode, and go-fuse a node, for every name it has
// looked up, for as long as it likes: until memory is short, which on a
// machine with gigabytes free is never. A node costs the daemon about
// 500 bytes with its entries in go-fuse's tables, so a walk of a
// 100,000-file workspace left 50 MB behind it, and the daemon's memory
// grew with the size of the kernel's cache rather than with what a turn
// does (issue #15 bounds it at 128 MiB).
//
// So past maxNodes known nodes the trimmer asks the kernel to prune the
// nodes used least recently (FUSE_NOTIFY_PRUNE, protocol 7.45): the
// kernel drops only dentries nothing holds — not an open file, not a
// process's working directory, not a directory with cached entries —
// then forgets their inodes, and go-fuse frees the nodes. A pruned name
// costs one LOOKUP when it is next used. "Used" is what the daemon
// sees: a lookup, stat or read of the node (Node.saw); a node not used
// since the last sweep goes first, the others get a second chance (the
// clock algorithm). Kernels before 7.45 refuse the notification: the
// trimmer then says so once and stops.
type trimmer struct {
	max  int
	kick chan struct{}

	sweeping sync.Mutex // held by a sweep or a shed: one at a time
	mu       sync.Mutex
	ring     []*Node // nodes made, oldest first; forgotten ones until a sweep drops them
}

// DefaultMaxNodes is the known nodes past which the trimmer prunes:
// about 16 MB of them.
const DefaultMaxNodes = 32 << 10

// trimBatch is how many nodes one notification names.
const trimBatch = 512

func newTrimmer(max int) *trimmer {
	if max <= 0 {
		max = DefaultMaxNodes
	}
	return &trimmer{max: max, kick: make(chan struct{}, 1)}
}

// add notes a node made for the kernel.
func (t *trimmer) add(n *Node) {
	n.used.Store(true) // a node is used as it is made: the sweep spares it once
	t.mu.Lock()
	t.ring = append(t.ring, n)
	over := len(t.ring) > t.max
	t.mu.Unlock()
	if over {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

// run sweeps whenever add finds too many nodes, and again every
// trimEvery while there are, until done is closed.
func (t *trimmer) run(root *gofs.Inode, done <-chan struct{}, warn func(error)) {
	for {
		select {
		case <-done:
			return
		case <-t.kick:
		}
		for over := true; over; {
			if err := t.sweep(root); err != nil {
				select {
				case <-done: // unmounted meanwhile
				default:
					warn(err)
				}
				return
			}
			select {
			case <-done:
				return
			case <-time.After(trimEvery):
			}
			t.mu.Lock()
			over = len(t.ring) > t.max
			t.mu.Unlock()
		}
	}
}

// trimEvery spaces sweeps: the kernel's forgets arrive after the
// notification, and the next sweep counts what they left.
const trimEvery = time.Second

// sweep drops forgotten nodes from the ring and asks the kernel to
// prune enough of the rest to bring it to three quarters of max.
func (t *trimmer) sweep(root *gofs.Inode) error {
	t.sweeping.Lock()
	defer t.sweeping.Unlock()
	t.mu.Lock()
	nodes := t.ring
	t.ring = nil
	t.mu.Unlock()

	kept := nodes[:0]
	for _, n := range nodes {
		// A node that is used was made or touched since the last
		// sweep: it may not be in go-fuse's tables yet, and Forgotten
		// would say so. It is looked at again next time.
		if n.used.Load() || !n.Forgotten() {
			kept = append(kept, n)
		}
	}
	t.mu.Lock()
	excess := len(kept) + len(t.ring) - t.max*3/4
	t.mu.Unlock()
	var prune []*gofs.Inode
	for _, n := range kept {
		if excess <= 0 {
			break
		}
		if n.used.Load() {
			n.used.Store(false)
			continue
		}
		if n.Forgotten() {
			continue // forgotten since the pass above: nothing to prune
		}
		prune = append(prune, n.EmbeddedInode())
		excess--
	}
	t.mu.Lock()
	t.ring = append(kept, t.ring...)
	t.mu.Unlock()
	return notifyPrune(root, prune)
}

// shed asks the kernel to prune every node it knows, deepest first: a
// directory's dentry is held by its children's, so it goes only after
// them, in the same notification or a later one. What the kernel holds
// (open files, working directories) stays. Then it drops the nodes the
// kernel forgot from the ring, which holds the last reference to them
// (and would until the next sweep, which only runs past max).
func (t *trimmer) shed(root *gofs.Inode) (asked, forgotten int, err error) {
	t.sweeping.Lock()
	defer t.sweeping.Unlock()
	t.mu.Lock()
	nodes := slices.Clone(t.ring)
	t.mu.Unlock()
	type known struct {
		n     *Node
		depth int
	}
	all := make([]known, 0, len(nodes))
	for _, n := range nodes {
		if !n.Forgotten() {
			all = append(all, known{n, depthOf(n.EmbeddedInode())})
		}
	}
	slices.SortFunc(all, func(a, b known) int { return b.depth - a.depth })
	prune := make([]*gofs.Inode, len(all))
	pruned := make(map[*Node]bool, len(all))
	for i, k := range all {
		prune[i] = k.n.EmbeddedInode()
		pruned[k.n] = true
	}
	if err := notifyPrune(root, prune); err != nil {
		return len(prune), 0, err
	}
	// The kernel sends the forgets once it has dropped the dentries,
	// and they are served in a moment: wait until they stop coming.
	gone := func() int {
		k := 0
		for n := range pruned {
			if n.Forgotten() {
				k++
			}
		}
		return k
	}
	forgotten = gone()
	for waited := time.Duration(0); waited < shedWait; waited += shedPoll {
		time.Sleep(shedPoll)
		k := gone()
		if k == forgotten {
			break
		}
		forgotten = k
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.ring[:0]
	for _, n := range t.ring {
		// A pruned node was in go-fuse's tables: Forgotten means it.
		if !pruned[n] || !n.Forgotten() {
			kept = append(kept, n)
		}
	}
	clear(t.ring[len(kept):])
	t.ring = kept
	return len(prune), forgotten, nil
}

// How long a shed waits for the forgets, at most, and how often it
// looks.
const (
	shedWait = 500 * time.Millisecond
	shedPoll = 20 * time.Millisecond
)

// depthOf is how many directories lie above in.
func depthOf(in *gofs.Inode) int {
	d := 0
	for _, p := in.Parent(); p != nil; _, p = p.Parent() {
		d++
	}
	return d
}

// notifyPrune names nodes to the kernel for pruning, trimBatch at a
// time, in order.
func notifyPrune(root *gofs.Inode, nodes []*gofs.Inode) error {
	for len(nodes) > 0 {
		k := min(len(nodes), trimBatch)
		if e := root.NotifyPrune(nodes[:k]); e != 0 {
			return e
		}
		nodes = nodes[k:]
	}
	return nil
}

// Shed asks the kernel to forget every name of the workspace it caches
// and nothing holds, so that go-fuse frees their nodes, and returns how
// many nodes it named and how many the kernel forgot. The kernel prunes
// without waiting for any request, so the caller may hold the journal's
// gate.
func (m *Mount) Shed() (asked, forgotten int, err error) {
	return m.root.fs.trim.shed(m.root.EmbeddedInode())
}
