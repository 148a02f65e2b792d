package daemon

import (
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
)

// Change kinds: the net effect of a run of records on one path.
const (
	changeCreated  = "created"
	changeModified = "modified" // content changed, or the file was replaced
	changeDeleted  = "deleted"
	changeRenamed  = "renamed" // now at Path, was at From
	changeMetadata = "metadata"
)

// change is the net effect of a run of records on one path.
type change struct {
	Path   string
	Kind   string
	From   string         // changeRenamed: where it was
	Type   uint32         // S_IFMT bits
	Bytes  int64          // pre-image bytes journaled or kept aside
	Caller journal.Caller // who made the first change
	Step   string
	Seq    uint64 // the first record
	Time   time.Time
	// Outside: (some of) the change was made outside the mount and
	// found by a rescan; what it destroyed is unknown.
	Outside bool
	// Origin is the path, when the run began, of what the change is
	// about: its From or its Path then, followed back through renames
	// of the directories above it — and, for a file a rename replaced
	// (sed -i), of the file it replaced. A diff reads the old version
	// there. "" for what is new (created), and for the root.
	Origin string
	// NotAgent: (some of) the change was made during a turn by a
	// process outside the turn's agent scope (Record.NotAgent).
	NotAgent bool
}

// foldChanges folds records, in sequence order, into one change per path:
// a file created and then written is created; created and then deleted
// is nothing; written to a temporary file and renamed over the original
// (sed -i) is modified; renamed is renamed from its old path. A
// directory's own time stamps changing because of its entries are not
// a change. The result is sorted by path.
func foldChanges(recs []*journal.Record) []change {
	var f folder
	for _, r := range recs {
		f.Add(r)
	}
	return f.Changes()
}

// A folder is foldChanges one record at a time: it holds the changes so
// far, never the records, so a turn of 150,000 records is summed up
// while they are read.
type folder struct {
	m map[string]*change
}

// Add folds in r, the record after those added before.
func (f *folder) Add(r *journal.Record) {
	if f.m == nil {
		f.m = map[string]*change{}
	}
	foldRecord(f.m, r)
}

// Count returns how many of the changes so far keep accepts.
func (f *folder) Count(keep func(*change) bool) int {
	n := 0
	for _, c := range f.m {
		if keep(c) {
			n++
		}
	}
	return n
}

// Changes returns the changes so far, sorted by path.
func (f *folder) Changes() []change {
	out := make([]change, 0, len(f.m))
	for _, c := range f.m {
		out = append(out, *c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out
}

// placeOf returns where path was when the run began: its directory
// followed back through the renames the changes so far record (the
// nearest directory above it with a change of its own), its name kept;
// "" if that directory is new.
func placeOf(m map[string]*change, path string) string {
	for dir := path; ; {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			return path
		}
		dir = dir[:i]
		if c := m[dir]; c != nil {
			if c.Origin == "" {
				return ""
			}
			return c.Origin + path[len(dir):]
		}
	}
}

func foldRecord(m map[string]*change, r *journal.Record) {
	add := func(path, kind string) *change {
		c := &change{Path: path, Kind: kind, Type: r.Type, Caller: r.Caller, Step: r.Step, Seq: r.Seq, Time: r.Time}
		if kind != changeCreated {
			c.Origin = placeOf(m, path)
		}
		m[path] = c
		return c
	}
	e := m[r.Path]
	switch r.Kind {
	case journal.KindCreate, journal.KindLink:
		switch {
		case e == nil:
			add(r.Path, changeCreated)
		case e.Kind == changeDeleted:
			e.Kind, e.Type = changeModified, r.Type
		}
	case journal.KindAttr:
		if r.Cause == journal.CauseDirent {
			return
		}
		kind := changeMetadata
		if r.Cause.Content() {
			kind = changeModified
		}
		switch {
		case e == nil:
			add(r.Path, kind)
		case e.Kind == changeMetadata:
			e.Kind = kind
		}
	case journal.KindData:
		if e == nil {
			e = add(r.Path, changeModified)
		} else if e.Kind == changeMetadata {
			e.Kind = changeModified
		}
		e.Bytes += r.Bytes()
	case journal.KindXattr:
		if e == nil {
			e = add(r.Path, changeMetadata)
		}
		e.Bytes += r.Bytes()
	case journal.KindRemove:
		switch {
		case e == nil:
			add(r.Path, changeDeleted).Bytes = r.Bytes()
		case e.Kind == changeCreated:
			delete(m, r.Path)
		case e.Kind == changeRenamed:
			delete(m, r.Path)
			d := add(e.From, changeDeleted)
			d.Bytes, d.Caller, d.Seq, d.Time, d.Origin = e.Bytes+r.Bytes(), e.Caller, e.Seq, e.Time, e.Origin
		default:
			e.Kind = changeDeleted
			e.Bytes += r.Bytes()
		}
	case journal.KindRename:
		foldRename(m, r, add)
		if r.NotAgent {
			for _, p := range []string{r.Path, r.Path2} {
				if e := m[p]; e != nil {
					e.NotAgent = true
				}
			}
		}
		return
	case journal.KindOutside:
		kind := outsideKind(r.Cause)
		switch {
		case e == nil:
			e = add(r.Path, kind)
		case e.Kind == changeCreated && kind == changeDeleted:
			e.Kind = changeDeleted // made through the mount, deleted behind its back
		case e.Kind != changeCreated:
			e.Kind = kind
		}
		e.Outside = true
	}
	if e := m[r.Path]; e != nil && r.NotAgent {
		e.NotAgent = true
	}
}

func foldRename(m map[string]*change, r *journal.Record, add func(string, string) *change) {
	from, to := r.Path, r.Path2
	move := moveEntry
	if r.Type == unix.S_IFDIR || r.Flags&unix.RENAME_EXCHANGE != 0 {
		move = moveTree
	}
	// Where the objects at from and to were when the run began.
	origin := func(p string) string {
		if c := m[p]; c != nil {
			return c.Origin
		}
		return placeOf(m, p)
	}
	if r.Flags&unix.RENAME_EXCHANGE != 0 {
		oFrom, oTo := origin(from), origin(to)
		move(m, from, "\x00swap")
		move(m, to, from)
		move(m, "\x00swap", to)
		for p, o := range map[string]string{from: oTo, to: oFrom} {
			if e := m[p]; e == nil {
				add(p, changeModified).Origin = o
			} else if e.Kind != changeCreated {
				e.Kind = changeModified
			}
		}
		return
	}
	src, dst := m[from], m[to]
	oFrom, oTo := origin(from), origin(to)
	replaced := r.Aside != "" || (dst != nil && dst.Kind == changeDeleted)
	if dst != nil && dst.Kind == changeCreated {
		// What it replaced was made in this run of records: nothing
		// that existed before was replaced (mkdir a b; mv -T a b).
		replaced = false
	}
	move(m, from, to)
	switch {
	case src == nil:
		src = add(to, changeRenamed)
		src.From, src.Origin = from, oFrom
	case src.Kind == changeCreated && replaced:
		// A new file in the place of an old one: the place's content
		// changed, from the old one's.
		src.Kind, src.Origin = changeModified, oTo
	case src.Kind == changeCreated, src.Kind == changeRenamed:
		// A new file moved, or a moved file moved again.
	default:
		src.Kind, src.From = changeRenamed, from
	}
	if dst != nil && (replaced || dst.Kind == changeCreated && src.Kind == changeCreated) {
		// The path's history starts with what happened to the replaced
		// file — also one made in this run and replaced by another new
		// one (sed -i on a file the turn created): still created, by
		// whoever created it, in the step that did.
		src.Bytes += dst.Bytes
		src.Caller, src.Step, src.Seq, src.Time = dst.Caller, dst.Step, dst.Seq, dst.Time
	}
	src.Bytes += r.Bytes()
}

// moveEntry moves the change at from, if any, to to.
func moveEntry(m map[string]*change, from, to string) {
	c := m[from]
	delete(m, from)
	delete(m, to)
	if c != nil {
		c.Path = to
		m[to] = c
	}
}

// moveTree moves the change at from, and every change beneath it, to
// the same place under to. What was at to is overwritten.
func moveTree(m map[string]*change, from, to string) {
	prefix := from + "/"
	var moved []*change
	for p, c := range m {
		if p == from || strings.HasPrefix(p, prefix) {
			delete(m, p)
			c.Path = to + p[len(from):]
			moved = append(moved, c)
		}
	}
	delete(m, to)
	for _, c := range moved {
		m[c.Path] = c
	}
}

// outsideKind is the change kind of a KindOutside record's cause:
// created, deleted, or (changed in place or replaced) modified.
func outsideKind(c journal.Cause) string {
	switch c {
	case journal.CauseOutsideCreated:
		return changeCreated
	case journal.CauseOutsideDeleted:
		return changeDeleted
	}
	return changeModified
}
