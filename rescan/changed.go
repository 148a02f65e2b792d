package rescan

import (
	"fmt"
	"sort"
	"syscall"

	"github.com/cowfs/cowfs/journal"
)

// changedOnly is a scan that stats only what may have changed since
// the last scan, while every directory holding a tracked path is
// watched (watch.go): the paths the records since then name, what is
// beneath a directory they renamed or removed, and the paths the
// watcher's events (changed) named, with what is beneath those that
// are or were directories. Each is judged exactly as a full scan
// judges it. A tracked path none of these names is as the last scan
// saw it — but for changes a full scan explains by identity alone,
// which this scan cannot find by path: an inode changed through the
// mount under another of its names, or changed in place with no record
// since the last scan (its stamp). Finding either, it does nothing and
// returns why a full scan must run.
func (sc *scan) changedOnly(changed []changedEntry) (string, error) {
	s, ex := sc.s, sc.ex
	// What each candidate was at the last scan: all a candidate keeps
	// between the two passes below, since a large turn names 100,000
	// paths. What is there now is looked at in each pass.
	type candidate struct {
		old       journal.Fingerprint
		had, dead bool
	}
	cands := map[string]candidate{}
	add := func(p string, old journal.Fingerprint, had bool) {
		if had && old.Last < s.window {
			// Left the window before the last scan: no longer tracked
			// (a full scan dropped it then).
			cands[p] = candidate{dead: true}
			return
		}
		cands[p] = candidate{old: old, had: had}
	}
	want := map[string]bool{}
	for p := range ex.last {
		want[p] = true
	}
	// Directories renamed or removed through the mount, or named by an
	// event as directories: what is beneath them too.
	trees := make([]string, 0, len(ex.trees))
	for p := range ex.trees {
		trees = append(trees, p)
		want[p] = true
	}
	for _, c := range changed {
		want[c.path] = true
		want[parentOf(c.path)] = true // its times moved with its entries
		if c.dir {
			trees = append(trees, c.path)
		}
	}
	wanted := make([]string, 0, len(want))
	for p := range want {
		wanted = append(wanted, p)
	}
	sort.Strings(wanted)
	kept, err := s.j.FingerprintsOf(wanted)
	if err != nil {
		return "", err
	}
	for _, p := range wanted {
		old, had := kept[p]
		add(p, old, had)
	}

	// The first pass looks at every candidate and checks what a scan by
	// path cannot settle: until it is done, nothing is journaled or
	// stored, so a full scan can still take over.
	isTree := map[string]bool{}
	for _, p := range trees {
		isTree[p] = true
	}
	treeIsDir := map[string]bool{} // a tree that is a directory now
	inos := map[uint64]bool{}
	names := map[uint64]uint32{} // names of each file among the candidates
	type linked struct {
		path       string
		ino, inode uint64 // identity; inode number on the backing filesystem
		nlink      uint32
	}
	var multi []linked     // the files found with more than one name
	var renamedFrom string // the first path that held such a file before
	var paths []string
	look := func(ps []string) {
		sort.Strings(ps) // a directory at a time
		for _, p := range ps {
			c := cands[p]
			if _, named := ex.last[p]; c.dead && !named {
				continue
			}
			cur, st, err := sc.look(p)
			// The mount changed a file with other names, which this path
			// no longer holds: they may be tracked.
			if c.had && c.old.Type != syscall.S_IFDIR && c.old.Nlink > 1 && ex.inos[c.old.Ino] && cur.Ino != c.old.Ino &&
				(renamedFrom == "" || p < renamedFrom) {
				renamedFrom = p
			}
			if err != nil {
				continue
			}
			if isTree[p] && cur.Type == syscall.S_IFDIR {
				treeIsDir[p] = true
			}
			inos[c.old.Ino] = true
			if st != nil {
				inos[cur.Ino] = true
				if cur.Type != syscall.S_IFDIR {
					names[cur.Ino]++
					if st.Nlink > 1 {
						multi = append(multi, linked{p, cur.Ino, st.Ino, uint32(st.Nlink)})
					}
				}
			}
		}
		paths = append(paths, ps...)
	}
	first := make([]string, 0, len(cands))
	for p := range cands {
		first = append(first, p)
	}
	look(first)
	// Only a directory, now or when last seen, has tracked paths
	// beneath it (or a path never seen: a directory above tracked
	// ones). Most of a turn's removals are files: no lookup each.
	var roots []string
	for _, p := range trees {
		if c := cands[p]; !c.had || c.old.Type == syscall.S_IFDIR || treeIsDir[p] {
			roots = append(roots, p)
		}
	}
	if len(roots) > 0 {
		under, err := s.j.FingerprintsUnder(roots)
		if err != nil {
			return "", err
		}
		var more []string
		for p, f := range under {
			if _, ok := cands[p]; !ok {
				add(p, f, true)
				more = append(more, p)
			}
		}
		look(more)
	}
	sort.Slice(multi, func(a, b int) bool { return multi[a].path < multi[b].path })
	for _, m := range multi {
		// A file with a name none of the candidates is (nor the aside
		// area's, which cowfs keeps): a tracked path may hold it, and a
		// change to it there leaves that fingerprint behind.
		if m.nlink > names[m.ino]+s.asideLinks(m.inode) {
			return fmt.Sprintf("a file with more than one name changed (%s)", m.path), nil
		}
	}
	if renamedFrom != "" {
		return fmt.Sprintf("a file with more than one name changed (%s, before)", renamedFrom), nil
	}
	for ino := range ex.stamps {
		if !ex.inos[ino] && !inos[ino] {
			return "the mount changed an inode no record since the last scan names", nil
		}
	}

	// The second pass judges each candidate as it looks at it again
	// (a change outside the mount in between is judged as any other).
	sort.Strings(paths)
	for _, p := range paths {
		c := cands[p]
		if c.dead {
			if _, named := ex.last[p]; !named {
				sc.drop = append(sc.drop, p)
				continue
			}
		}
		cur, st, err := sc.look(p)
		stored, err := sc.judge(p, c.old, c.had, cur, st, err)
		if err != nil {
			return "", err
		}
		if c.dead && !stored {
			sc.drop = append(sc.drop, p)
		}
	}
	return "", nil
}
