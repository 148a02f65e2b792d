package rollback

import (
	"strings"

	"github.com/cowfs/cowfs/journal"
	"golang.org/x/sys/unix"
)

// past is the workspace's namespace at an earlier time, kept as a sparse
// map over the present: it starts equal to the present, and undoing
// records newest first moves it back in time. It answers, for a path at
// that time, where the object then at that path is now.
//
// The explicit entries form a tree of path components, so undoing a
// rename moves one subtree, and clearing a directory drops one, however
// many entries lie beneath it: a plan over n records costs n times the
// depth of their paths, never n times the entries known so far.
type past struct {
	aside func(name string) string // aside name -> backing-relative path
	root  pastNode                 // the workspace root, path ""
}

// pastNode is one path of the past: its explicit entry, if it has one,
// and the paths beneath it that have entries of their own (or lead to
// some).
type pastNode struct {
	e    entry
	set  bool // e is explicit; otherwise the path is as the entries above it say
	kids map[string]*pastNode
}

// entry says where the object at a past path is now.
type entry struct {
	absent bool   // nothing was at the path
	gone   bool   // an object was there, new in its epoch, since removed without being kept
	loc    string // backing-relative path of the object today (live or aside; "" is the root)
	ino    uint64 // its identity, when known from a record (0: stat loc)
	// kept: loc is where a record kept the object (the aside area, or
	// where a later record took it from there), so something must be
	// there. Otherwise loc is the path followed into the present —
	// itself, or beneath a directory that moved — and if nothing is
	// there now, nothing was there then: no record says it left.
	kept bool
}

func newPast(aside func(string) string) *past {
	return &past{aside: aside}
}

// vanished reports whether the entry names an object that existed but
// is gone for good: new in its epoch, then removed without being kept.
func (e entry) vanished() bool { return e.gone }

// lookup returns where the object at path (at the past's time) is now.
// A path inside a directory that was elsewhere then follows the
// directory. The root's own entry applies to the root alone.
func (p *past) lookup(path string) entry {
	if path == "" {
		if p.root.set {
			return p.root.e
		}
		return entry{}
	}
	var found *pastNode
	end := 0 // path[:end] is found's path
	n := &p.root
	for i := 0; i < len(path); {
		j := strings.IndexByte(path[i:], '/')
		if j < 0 {
			j = len(path) - i
		}
		if n = n.kids[path[i:i+j]]; n == nil {
			break
		}
		i += j
		if n.set {
			found, end = n, i
		}
		i++ // the slash
	}
	switch {
	case found == nil:
		return entry{loc: path}
	case found.e.absent || found.e.gone || end == len(path):
		return found.e
	}
	return entry{loc: found.e.loc + path[end:]}
}

// undo moves the past back before r.
func (p *past) undo(r *rec) {
	switch r.Kind {
	case journal.KindCreate, journal.KindLink:
		p.clear(r.Path)
		p.set(r.Path, entry{absent: true})
	case journal.KindRemove:
		// Without an aside the object was created in the same epoch;
		// its create record, further back, makes the path absent.
		e := entry{ino: r.Ino, gone: r.Aside == ""}
		if r.Aside != "" {
			e.loc, e.kept = p.fromAside(r.Aside, r.Path), true
		}
		p.set(r.Path, e)
	case journal.KindRename:
		from, to := r.Path, r.Path2
		if r.Flags&unix.RENAME_EXCHANGE != 0 {
			a, b := p.lookup(from), p.lookup(to)
			subA, subB := p.take(from), p.take(to)
			p.put(to, subA)
			p.put(from, subB)
			p.set(from, b)
			p.set(to, a)
			return
		}
		moved := p.lookup(to)
		sub := p.take(to)
		p.clear(from)
		p.put(from, sub)
		p.set(from, moved)
		switch {
		case r.Aside != "":
			p.set(to, entry{loc: p.fromAside(r.Aside, to), ino: r.Ino2, kept: true})
		case r.Ino2 != 0:
			p.set(to, entry{ino: r.Ino2, gone: true}) // replaced, and gone for good
		default:
			p.set(to, entry{absent: true})
		}
	}
}

// fromAside moves the object kept aside under name back to path in the
// past, and returns where it is today: in the aside area — unless a
// later record (a rollback's, undone since) moved it out again, which
// the past already knows.
func (p *past) fromAside(name, path string) string {
	ap := p.aside(name)
	loc := ap
	if e := p.lookup(ap); !e.absent && !e.gone {
		loc = e.loc
	}
	p.put(path, p.take(ap))
	p.set(ap, entry{absent: true}) // nothing was kept there yet
	return loc
}

// node returns the node of path, made if make is set (else nil if
// there is none).
func (p *past) node(path string, make bool) *pastNode {
	n := &p.root
	for path != "" {
		name, rest, _ := strings.Cut(path, "/")
		next := n.kids[name]
		if next == nil {
			if !make {
				return nil
			}
			if n.kids == nil {
				n.kids = map[string]*pastNode{}
			}
			next = &pastNode{}
			n.kids[name] = next
		}
		n, path = next, rest
	}
	return n
}

// set gives path an explicit entry.
func (p *past) set(path string, e entry) {
	n := p.node(path, true)
	n.e, n.set = e, true
}

// take removes and returns the explicit entries beneath dir (not dir
// itself), as the subtree they form. Nothing lies beneath the root in
// this sense: its entry applies to itself alone.
func (p *past) take(dir string) map[string]*pastNode {
	n := p.node(dir, false)
	if dir == "" || n == nil {
		return nil
	}
	sub := n.kids
	n.kids = nil
	return sub
}

// put places a subtree taken from another directory beneath dir; its
// entries replace those at the same paths.
func (p *past) put(dir string, sub map[string]*pastNode) {
	if len(sub) == 0 {
		return
	}
	merge(p.node(dir, true), sub)
}

func merge(n *pastNode, sub map[string]*pastNode) {
	if n.kids == nil {
		n.kids = sub
		return
	}
	for name, s := range sub {
		d := n.kids[name]
		if d == nil {
			n.kids[name] = s
			continue
		}
		if s.set {
			d.e, d.set = s.e, true
		}
		if len(s.kids) > 0 {
			merge(d, s.kids)
		}
	}
}

// clear forgets path and everything beneath it (the root: its own
// entry).
func (p *past) clear(path string) {
	if path == "" {
		p.root.e, p.root.set = entry{}, false
		return
	}
	dir, name := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		dir, name = path[:i], path[i+1:]
	}
	if n := p.node(dir, false); n != nil {
		delete(n.kids, name)
	}
}
