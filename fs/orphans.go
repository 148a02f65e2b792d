package fs

import (
	"strings"
	"sync"
)

// go-fuse computes a node's path from the parents it knows. A node can
// lose them all while the kernel still uses it: its last name was
// removed while it was open (it lives on in the aside area), or a
// rollback moved it under a directory go-fuse has not seen. Such a node
// records where it is (Node.movedTo), and orphans indexes those nodes
// by that path, so a later rollback move of the path (or of a directory
// above it) can follow them, and put them back in go-fuse's tree when
// their new parent is known. When the kernel looks such a node up again
// at its new name, go-fuse gives it a parent and movedTo goes unused.
//
// Entries are dropped when taken, or, once go-fuse has forgotten the
// node (it has no kernel reference and no parent), by prune. (go-fuse's
// OnForget is not used for that: it can be called for a node still in
// use.)
type orphans struct {
	mu sync.Mutex
	at map[string]*Node
	// beneath counts the entries of at beneath each directory, so that
	// moving a path with nothing beneath it — every one of the thousands
	// of files a rollback moves aside — costs no scan of at.
	beneath map[string]int
	placed  int
	// left, if set, is called with a place a node left for another: an
	// aside entry kept only for that node can go. It must not block
	// (it is called with o.mu held).
	left func(p string)
}

// place records that n, parentless, lives at p.
func (o *orphans) place(n *Node, p string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if old := n.movedTo.Load(); old != nil && *old != p {
		if o.at[*old] == n {
			o.del(*old)
		}
		if o.left != nil {
			o.left(*old)
		}
	}
	n.movedTo.Store(&p)
	o.set(p, n)
	if o.placed++; o.placed%pruneOrphansEvery == 0 {
		o.prune()
	}
}

// pruneOrphansEvery is how many placements pass between prunes.
const pruneOrphansEvery = 4096

// prune drops the nodes go-fuse has forgotten. The caller holds o.mu.
func (o *orphans) prune() {
	for p, n := range o.at {
		if n.Forgotten() {
			o.del(p)
		}
	}
}

// set records n at p. The caller holds o.mu.
func (o *orphans) set(p string, n *Node) {
	if o.at == nil {
		o.at, o.beneath = map[string]*Node{}, map[string]int{}
	}
	if _, ok := o.at[p]; !ok {
		o.count(p, 1)
	}
	o.at[p] = n
}

// del forgets the entry at p. The caller holds o.mu.
func (o *orphans) del(p string) {
	if _, ok := o.at[p]; ok {
		delete(o.at, p)
		o.count(p, -1)
	}
}

// count adds d to the count of every directory above p.
func (o *orphans) count(p string, d int) {
	for i := strings.LastIndexByte(p, '/'); i >= 0; i = strings.LastIndexByte(p[:i], '/') {
		dir := p[:i]
		if o.beneath[dir] += d; o.beneath[dir] == 0 {
			delete(o.beneath, dir)
		}
	}
}

// under returns the parentless node whose place is p or the nearest
// directory above p, and the rest of p beneath it.
func (o *orphans) under(p string) (*Node, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for q := p; ; {
		if n := o.at[q]; n != nil {
			return n, strings.TrimPrefix(p[len(q):], "/")
		}
		i := strings.LastIndexByte(q, '/')
		if i < 0 {
			return nil, ""
		}
		q = q[:i]
	}
}

// holds reports whether the node placed at p may still be in use: the
// kernel has not forgotten it.
func (o *orphans) holds(p string) bool {
	o.mu.Lock()
	n := o.at[p]
	o.mu.Unlock()
	return n != nil && !n.Forgotten()
}

// take removes and returns the parentless node at p, if any.
func (o *orphans) take(p string) *Node {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.at[p]
	o.del(p)
	return n
}

// moved follows a rename of from to to for the parentless nodes beneath
// from.
func (o *orphans) moved(from, to string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.beneath[from] == 0 {
		return
	}
	prefix := from + "/"
	moved := map[string]*Node{}
	for p, n := range o.at {
		if strings.HasPrefix(p, prefix) {
			moved[to+p[len(from):]] = n
			o.del(p)
		}
	}
	for np, n := range moved {
		o.set(np, n)
		n.movedTo.Store(&np)
	}
}
