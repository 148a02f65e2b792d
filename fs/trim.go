package fs

import (
	"sync"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
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

	mu   sync.Mutex
	ring []*Node // nodes made, oldest first; forgotten ones until a sweep drops them
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
	for len(prune) > 0 {
		k := min(len(prune), trimBatch)
		if e := root.NotifyPrune(prune[:k]); e != 0 {
			return e
		}
		prune = prune[k:]
	}
	return nil
}
