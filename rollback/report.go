package rollback

import (
	"sort"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
)

// What a rollback does to a path, as the harness sees it.
const (
	Restore = "restore" // it exists before and after; its content or attributes come back
	Recover = "recover" // it was deleted or renamed away; it comes back
	Delete  = "delete"  // it did not exist when the target turn began; it goes
	Skip    = "skip"    // it is left as it is; Reason says why
)

// PathAction is what a rollback does, or did, to one path.
type PathAction struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Type   uint32 `json:"type"` // S_IFMT bits
	Reason string `json:"reason,omitempty"`
	// A rename undone: the object recovered at Path comes From another
	// path, or the object deleted from Path moves To another.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Retried: an earlier rollback skipped changes to this path, and
	// this one undoes them (retry.go). Never on a skip.
	Retried bool `json:"retried,omitempty"`
}

// Counts sums a report: files (and other non-directories) by action, and
// directories removed and recreated.
type Counts struct {
	Restored      int `json:"restored"`
	Recovered     int `json:"recovered"`
	Deleted       int `json:"deleted"`
	Skipped       int `json:"skipped"`
	DirsRemoved   int `json:"dirs_removed"`
	DirsRecreated int `json:"dirs_recreated"`
}

// Count sums a report.
func Count(report []PathAction) Counts {
	var c Counts
	for _, a := range report {
		dir := a.Type == syscall.S_IFDIR
		switch {
		case a.Action == Skip:
			c.Skipped++
		case a.To != "":
			// The other half of a rename undone, counted as recovered.
		case a.Action == Delete && dir:
			c.DirsRemoved++
		case a.Action == Recover && dir && a.From == "":
			c.DirsRecreated++
		case a.Action == Delete:
			c.Deleted++
		case a.Action == Recover:
			c.Recovered++
		case a.Action == Restore && !dir:
			c.Restored++
		}
	}
	return c
}

// report works out what plan does to each path the records name, by
// comparing each path today with the namespace the plan leads to.
func (p *planner) report(plan *Plan, recs []rec) []PathAction {
	skipped := map[uint64]bool{}
	for _, s := range plan.Skipped {
		skipped[s] = true
	}
	after := newPast(p.asidePath)
	candidates := map[string]uint32{} // path -> type the records give it
	for i := range recs {
		r := &recs[i]
		if r.Kind == journal.KindEvent {
			continue
		}
		// What the top of a stack settled leaves its paths as they are
		// (stack.go): they are not this rollback's to report.
		for i, path := range []string{r.Path, r.Path2} {
			if path != "" && !aside.Private(path) && candidates[path] == 0 && !p.isSettled(r) {
				candidates[path] = recordType(r, i == 1)
			}
		}
		if !skipped[r.Seq] {
			after.undo(r)
		}
	}
	restored := map[uint64]bool{}
	// A path's reason is its first skipped step's — but a directory's
	// times (a skipped change outside a turn to its entries) explain
	// less than why the directory itself stays (it is not empty), and
	// give way to it.
	reasons, timesOnly := map[string]string{}, map[string]string{}
	plan.eachStep(0, func(_ int, s *Step) error {
		switch {
		case p.notInEffect[s.Seq]:
			// A change outside the turns that is no longer in effect:
			// not undone, and no reason to skip the path.
		case s.Skip != "" && s.Op == opAttr && s.Dir:
			if !aside.Private(s.Path) && timesOnly[s.Path] == "" {
				timesOnly[s.Path] = s.Skip
			}
		case s.Skip != "":
			for _, path := range []string{s.Path, s.Path2} {
				if path != "" && !aside.Private(path) && reasons[path] == "" {
					reasons[path] = s.Skip
				}
			}
		case s.Op == opData || s.Op == opXattr || (s.Op == opAttr && !s.Dir):
			restored[s.Ino] = true
		}
		return nil
	})
	// A path changed outside the mount that no step puts back is left
	// as it is, and the user must hear of it.
	// (Only the paths of such records are looked for among the steps':
	// a set of every path a step names is 10 MB at 100,000 paths.)
	outside := map[string]bool{}
	for i := range recs {
		if r := &recs[i]; r.Kind == journal.KindOutside && reasons[r.Path] == "" {
			outside[r.Path] = true
		}
	}
	if len(outside) > 0 {
		plan.eachStep(0, func(_ int, s *Step) error {
			if s.Skip == "" {
				delete(outside, s.Path)
				delete(outside, s.Path2)
			}
			return nil
		})
	}
	for path := range outside {
		reasons[path] = reasonOutsideMount
	}
	for path, why := range timesOnly {
		if reasons[path] == "" {
			reasons[path] = why
		}
	}
	retried := p.retried(plan, recs)
	out := make([]PathAction, 0, len(candidates))
	// deleted and recovered: the entry in out of each identity leaving a
	// path, and coming back at one; -1 where more than one does (the
	// names of a hard-linked inode), so which went where is not known.
	deleted, recovered := map[uint64]int{}, map[uint64]int{}
	note := func(m map[uint64]int, id uint64, i int) {
		if _, ok := m[id]; ok {
			i = -1
		}
		m[id] = i
	}
	for path, recType := range candidates {
		a := PathAction{Path: path}
		nowID, nowOK := p.identity(entry{loc: path})
		e := after.lookup(path)
		thenID, thenOK := p.identity(e)
		switch {
		case reasons[path] != "":
			a.Action, a.Reason = Skip, reasons[path]
		case nowOK && !thenOK:
			a.Action = Delete
			note(deleted, nowID, len(out))
		case !nowOK && thenOK:
			a.Action = Recover
			note(recovered, thenID, len(out))
		case nowOK && thenOK && (nowID != thenID || restored[nowID]):
			a.Action = Restore
		default:
			continue
		}
		a.Retried = a.Action != Skip && retried[path]
		if nowOK {
			a.Type = p.types[path]
		} else {
			a.Type = p.typeOf(e, recType)
		}
		out = append(out, a)
		if a.Action == Recover && a.Type == syscall.S_IFDIR {
			out = p.contents(out, path, e.loc, candidates)
		}
	}
	// An object leaving one path and coming back at another is a
	// rename undone.
	for id, d := range deleted {
		if r, ok := recovered[id]; ok && d >= 0 && r >= 0 {
			out[d].To, out[r].From = out[r].Path, out[d].Path
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// contents adds to out the entries a directory coming back whole from
// loc brings to path with it (a tree a rollback moved aside in one
// rename, trees.go), each recovered.
func (p *planner) contents(out []PathAction, path, loc string, named map[string]uint32) []PathAction {
	if !aside.Private(loc) {
		return out
	}
	p.env.Tree.Walk(loc, func(sub string, st *unix.Stat_t) error {
		if q := path + "/" + sub; named[q] == 0 { // a record's path is reported for itself
			out = append(out, PathAction{Path: q, Action: Recover, Type: st.Mode & syscall.S_IFMT})
		}
		return nil
	})
	return out
}

// recordType is the type a record gives its first (or second) path.
func recordType(r *rec, second bool) uint32 {
	switch {
	case second && r.Kind == journal.KindRename && r.Ino2 != 0 && r.Flags&unix.RENAME_EXCHANGE == 0:
		if t := r.Mode & syscall.S_IFMT; t != 0 {
			return t // the replaced target, kept aside
		}
	case r.Type != 0:
		return r.Type
	}
	return syscall.S_IFREG
}
