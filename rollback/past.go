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
type past struct {
	aside   func(name string) string // aside name -> backing-relative path
	entries map[string]entry         // explicitly known paths; the rest are as today
}

// entry says where the object at a past path is now.
type entry struct {
	absent bool   // nothing was at the path
	gone   bool   // an object was there, new in its epoch, since removed without being kept
	loc    string // backing-relative path of the object today (live or aside; "" is the root)
	ino    uint64 // its identity, when known from a record (0: stat loc)
}

func newPast(aside func(string) string) *past {
	return &past{aside: aside, entries: map[string]entry{}}
}

// vanished reports whether the entry names an object that existed but
// is gone for good: new in its epoch, then removed without being kept.
func (e entry) vanished() bool { return e.gone }

// lookup returns where the object at path (at the past's time) is now.
// A path inside a directory that was elsewhere then follows the
// directory.
func (p *past) lookup(path string) entry {
	for q := path; ; {
		if e, ok := p.entries[q]; ok {
			if e.absent || e.gone || q == path {
				return e
			}
			return entry{loc: e.loc + path[len(q):]}
		}
		i := strings.LastIndexByte(q, '/')
		if i < 0 {
			return entry{loc: path}
		}
		q = q[:i]
	}
}

// undo moves the past back before r.
func (p *past) undo(r *journal.Record) {
	switch r.Kind {
	case journal.KindCreate, journal.KindLink:
		p.clear(r.Path)
		p.entries[r.Path] = entry{absent: true}
	case journal.KindRemove:
		// Without an aside the object was created in the same epoch;
		// its create record, further back, makes the path absent.
		e := entry{ino: r.Ino, gone: r.Aside == ""}
		if r.Aside != "" {
			e.loc = p.fromAside(r.Aside, r.Path)
		}
		p.entries[r.Path] = e
	case journal.KindRename:
		from, to := r.Path, r.Path2
		if r.Flags&unix.RENAME_EXCHANGE != 0 {
			a, b := p.lookup(from), p.lookup(to)
			subA, subB := p.take(from), p.take(to)
			p.put(to, subA)
			p.put(from, subB)
			p.entries[from], p.entries[to] = b, a
			return
		}
		moved := p.lookup(to)
		sub := p.take(to)
		p.clear(from)
		p.put(from, sub)
		p.entries[from] = moved
		switch {
		case r.Aside != "":
			p.entries[to] = entry{loc: p.fromAside(r.Aside, to), ino: r.Ino2}
		case r.Ino2 != 0:
			p.entries[to] = entry{ino: r.Ino2, gone: true} // replaced, and gone for good
		default:
			p.entries[to] = entry{absent: true}
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
	p.entries[ap] = entry{absent: true} // nothing was kept there yet
	return loc
}

// take removes and returns the explicit entries beneath dir (not dir
// itself), keyed by their path relative to dir.
func (p *past) take(dir string) map[string]entry {
	prefix := dir + "/"
	sub := map[string]entry{}
	for k, e := range p.entries {
		if strings.HasPrefix(k, prefix) {
			sub[k[len(dir):]] = e
			delete(p.entries, k)
		}
	}
	return sub
}

// put places entries taken from another directory beneath dir.
func (p *past) put(dir string, sub map[string]entry) {
	for k, e := range sub {
		p.entries[dir+k] = e
	}
}

// clear forgets path and everything beneath it.
func (p *past) clear(path string) {
	delete(p.entries, path)
	p.take(path)
}
