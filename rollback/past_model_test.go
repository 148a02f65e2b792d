package rollback

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/journal"
	"golang.org/x/sys/unix"
)

// mapPast is the past as a flat map of paths, as it was first written:
// simple enough to trust, and quadratic in renames. TestPastAgreesWithMap
// checks the tree against it.
type mapPast struct {
	aside   func(string) string
	entries map[string]entry
}

func (p *mapPast) lookup(path string) entry {
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

func (p *mapPast) undo(r *journal.Record) {
	switch r.Kind {
	case journal.KindCreate, journal.KindLink:
		p.clear(r.Path)
		p.entries[r.Path] = entry{absent: true}
	case journal.KindRemove:
		e := entry{ino: r.Ino, gone: r.Aside == ""}
		if r.Aside != "" {
			e.loc, e.kept = p.fromAside(r.Aside, r.Path), true
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
			p.entries[to] = entry{loc: p.fromAside(r.Aside, to), ino: r.Ino2, kept: true}
		case r.Ino2 != 0:
			p.entries[to] = entry{ino: r.Ino2, gone: true}
		default:
			p.entries[to] = entry{absent: true}
		}
	}
}

func (p *mapPast) fromAside(name, path string) string {
	ap := p.aside(name)
	loc := ap
	if e := p.lookup(ap); !e.absent && !e.gone {
		loc = e.loc
	}
	p.put(path, p.take(ap))
	p.entries[ap] = entry{absent: true}
	return loc
}

func (p *mapPast) take(dir string) map[string]entry {
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

func (p *mapPast) put(dir string, sub map[string]entry) {
	for k, e := range sub {
		p.entries[dir+k] = e
	}
}

func (p *mapPast) clear(path string) {
	delete(p.entries, path)
	p.take(path)
}

// TestPastAgreesWithMap undoes random records — creations, removals
// kept aside or not, renames over and onto trees, exchanges — on the
// tree and on the flat map, and compares every lookup after each.
func TestPastAgreesWithMap(t *testing.T) {
	asidePath := func(n string) string { return ".cowfs/aside/" + n }
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		names := []string{"", "a", "b", "a/b", "a/c", "b/a", "a/b/c", "a/b/d", "c", "c/a/b", ".cowfs/aside/k1", ".cowfs/aside/k2/x"}
		path := func() string {
			for {
				if p := names[rng.IntN(len(names))]; p != "" || rng.IntN(8) == 0 {
					return p
				}
			}
		}
		tree, flat := newPast(asidePath), &mapPast{aside: asidePath, entries: map[string]entry{}}
		for i := 0; i < 60; i++ {
			r := &journal.Record{Ino: uint64(rng.IntN(5)), Ino2: uint64(rng.IntN(3))}
			switch rng.IntN(5) {
			case 0:
				r.Kind, r.Path = journal.KindCreate, path()
			case 1:
				r.Kind, r.Path = journal.KindRemove, path()
				if rng.IntN(2) == 0 {
					r.Aside = []string{"k1", "k2", "k3"}[rng.IntN(3)]
				}
			case 2, 3:
				r.Kind, r.Path, r.Path2 = journal.KindRename, path(), path()
				if rng.IntN(3) == 0 {
					r.Aside = []string{"k1", "k2", "k3"}[rng.IntN(3)]
				}
			case 4:
				r.Kind, r.Path, r.Path2, r.Flags = journal.KindRename, path(), path(), unix.RENAME_EXCHANGE
			}
			if r.Path == "" || r.Path2 == "" && r.Kind == journal.KindRename {
				continue // nothing renames or creates the root
			}
			s := slim(r)
			tree.undo(&s)
			flat.undo(r)
			for _, q := range append(names, "a/b/c/d", "zz", "c/a") {
				if got, want := tree.lookup(q), flat.lookup(q); got != want {
					t.Fatalf("seed %d, after %d records (last %s): lookup(%q) = %+v, want %+v", seed, i+1, recordString(r), q, got, want)
				}
			}
		}
	}
}

func recordString(r *journal.Record) string {
	return fmt.Sprintf("%v %q %q aside %q flags %d", r.Kind, r.Path, r.Path2, r.Aside, r.Flags)
}

// BenchmarkPastRenames undoes a turn that renamed every one of 20,000
// files beside each other: the tree's cost grows with the records, the
// flat map's with their square.
func BenchmarkPastRenames(b *testing.B) {
	const n = 20000
	recs := make([]*journal.Record, 0, n)
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("d%02d/f%05d", i%100, i)
		recs = append(recs, &journal.Record{Kind: journal.KindRename, Path: p, Path2: p + ".moved", Ino: uint64(i + 1)})
	}
	for b.Loop() {
		p := newPast(func(n string) string { return ".cowfs/aside/" + n })
		for _, r := range recs {
			s := slim(r)
			p.undo(&s)
		}
	}
}
