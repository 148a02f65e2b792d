package rescan

import (
	"fmt"
	"slices"
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
	// The candidates, in order, each once. A large turn names 100,000
	// paths: between the two passes below a candidate is only its path,
	// and what the last scan kept of it is read again, a batch at a
	// time (eachKept), rather than held.
	wanted := make([]string, 0, len(ex.last)+len(ex.trees)+2*len(changed))
	for p := range ex.last {
		wanted = append(wanted, p)
	}
	// Directories renamed or removed through the mount, or named by an
	// event as directories: what is beneath them too.
	trees := make([]string, 0, len(ex.trees))
	for p := range ex.trees {
		trees = append(trees, p)
		wanted = append(wanted, p)
	}
	for _, c := range changed {
		// Its parent too: its times moved with its entries.
		wanted = append(wanted, c.path, parentOf(c.path))
		if c.dir {
			trees = append(trees, c.path)
		}
	}
	sort.Strings(wanted)
	wanted = slices.Compact(wanted)

	// The first pass looks at every candidate and checks what a scan by
	// path cannot settle: until it is done, nothing is journaled or
	// stored, so a full scan can still take over.
	isTree := map[string]bool{}
	for _, p := range trees {
		isTree[p] = true
	}
	treeWas := map[string]candidate{} // what each tree was
	treeIsDir := map[string]bool{}    // a tree that is a directory now
	inos := map[uint64]bool{}
	names := map[uint64]uint32{} // names of each file among the candidates
	type linked struct {
		path       string
		ino, inode uint64 // identity; inode number on the backing filesystem
		nlink      uint32
	}
	var multi []linked     // the files found with more than one name
	var renamedFrom string // the first path that held such a file before
	look := func(p string, c candidate) {
		if isTree[p] {
			treeWas[p] = c
		}
		if _, named := ex.last[p]; c.dead && !named {
			return
		}
		cur, st, err := sc.look(p)
		// The mount changed a file with other names, which this path
		// no longer holds: they may be tracked.
		if c.had && c.old.Type != syscall.S_IFDIR && c.old.Nlink > 1 && ex.inos[c.old.Ino] && cur.Ino != c.old.Ino &&
			(renamedFrom == "" || p < renamedFrom) {
			renamedFrom = p
		}
		if err != nil {
			return
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
	if err := sc.eachKept(wanted, look); err != nil {
		return "", err
	}
	// Only a directory, now or when last seen, has tracked paths
	// beneath it (or a path never seen: a directory above tracked
	// ones). Most of a turn's removals are files: no lookup each.
	var roots []string
	for _, p := range trees {
		if c := treeWas[p]; !c.had || c.old.Type == syscall.S_IFDIR || treeIsDir[p] {
			roots = append(roots, p)
		}
	}
	var more []string // tracked paths beneath them not already wanted
	if len(roots) > 0 {
		under, err := s.j.FingerprintsUnder(roots)
		if err != nil {
			return "", err
		}
		for p := range under {
			if _, found := slices.BinarySearch(wanted, p); !found {
				more = append(more, p)
			}
		}
		sort.Strings(more)
		if err := sc.eachKept(more, look); err != nil {
			return "", err
		}
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
	// It stores only fingerprints of paths it has judged (judge saves a
	// batch at a time), each path once, so what it reads of a path is
	// what the first pass read.
	paths := append(wanted, more...)
	sort.Strings(paths)
	var judged error
	err := sc.eachKept(paths, func(p string, c candidate) {
		if judged != nil {
			return
		}
		if c.dead {
			if _, named := ex.last[p]; !named {
				sc.drop = append(sc.drop, p)
				return
			}
		}
		cur, st, err := sc.look(p)
		stored, err := sc.judge(p, c.old, c.had, cur, st, err)
		if err != nil {
			judged = err
			return
		}
		if c.dead && !stored {
			sc.drop = append(sc.drop, p)
		}
	})
	if err == nil {
		err = judged
	}
	return "", err
}

// candidate is what the last scan kept of a path a scan of what
// changed looks at.
type candidate struct {
	old       journal.Fingerprint
	had, dead bool
}

// keptBatch is how many candidates' fingerprints eachKept reads at a
// time: enough that reading them costs about a sweep of their keys,
// few enough that holding them costs little. A variable, so that a test
// can make batches small.
var keptBatch = 4096

// eachKept calls fn for each of paths, which are in order, with what
// the last scan kept of it.
func (sc *scan) eachKept(paths []string, fn func(p string, c candidate)) error {
	for len(paths) > 0 {
		batch := paths[:min(len(paths), keptBatch)]
		paths = paths[len(batch):]
		kept, err := sc.s.j.FingerprintsOf(batch)
		if err != nil {
			return err
		}
		for _, p := range batch {
			old, had := kept[p]
			c := candidate{old: old, had: had}
			if had && old.Last < sc.s.window {
				// Left the window before the last scan: no longer
				// tracked (a full scan dropped it then).
				c = candidate{dead: true}
			}
			fn(p, c)
		}
	}
	return nil
}
