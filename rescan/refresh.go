package rescan

import "github.com/cowfs/cowfs/journal"

// Paths stay watched after every rollback and unrevert (the dsh
// design's rule: otherwise a rollback silently drops overwrites). A
// scan takes the records since the last scan as explaining what
// happened to the paths they name, whenever it happened; a rollback's
// undo log, left to explain until the next boundary, would bless a
// write behind the mount made after the rollback to a path it
// restored, and a later rollback would overwrite that write. So a
// rollback, once its steps have run, refreshes the fingerprints of what
// it touched (Refresh) and an unrevert, which journals nothing, of what
// it left (Accept): from then on, a change to those paths is a change
// outside the mount again.

// Refresh takes what the records since the last scan did as explained,
// and nothing after: it refreshes the fingerprints of the tracked paths
// those records name (their paths, the inodes they changed, what lies
// beneath a directory they moved), starts tracking the paths they name
// for the first time, and notes the records as accounted for, so that
// they explain no later change. A rollback calls it when its steps have
// run, its records being the undo log of what it just did. Only what
// the records name is stat'ed. The caller holds the journal's gate g
// exclusively, and scanned under it before the records were made, so
// they are the rollback's own.
func (s *Scanner) Refresh(g journal.Gate) error {
	_, err := s.scan(g, nil, true)
	return err
}

// Accept takes what an unrevert left as explained: an unrevert changes
// the workspace without journaling (its rollback's records are what it
// undoes, and they are deleted), so the next scan must not take its
// changes for changes outside the mount. left maps each path the
// unrevert's steps changed to the identity a step left there (0: none;
// a later step may have moved it on, with a directory above it). A
// path's new state is accepted only if it is the unrevert's doing: an
// object the unrevert placed, or nothing where it moved or removed
// something — and beneath a path that came back whole, what it holds.
// Whatever else took a path's place since (a writer behind the mount
// exchanging names) stays unexplained, for the next scan to find. The
// directories holding the paths, and what is beneath them, are looked
// at too: their objects changed in place with the unrevert's (times,
// links). The caller holds the journal's gate exclusively.
func (s *Scanner) Accept(left map[string]uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Its steps may have put new directories where marked ones were:
	// the next scan marks anew.
	s.watched = false
	roots := make([]string, 0, 2*len(left))
	dirs := map[string]bool{}
	ids := map[uint64]bool{}
	for p, id := range left {
		roots = append(roots, p)
		ids[id] = true
		if d := parentOf(p); !dirs[d] {
			dirs[d] = true
			roots = append(roots, d) // its times moved with its entries
		}
	}
	delete(ids, 0)
	tracked, err := s.j.FingerprintsUnder(roots)
	if err != nil {
		return err
	}
	set := map[string]journal.Fingerprint{}
	stat := s.tree.NewStater()
	defer stat.Close()
	for q, old := range tracked {
		cur, _, err := s.fingerprint(stat, q)
		if err != nil {
			continue
		}
		cur.Last = old.Last
		if cur == old || !acceptable(q, old, cur, left, ids) {
			continue
		}
		set[q] = cur
	}
	if len(set) == 0 {
		return nil
	}
	return s.j.SaveFingerprints(set, nil, s.upTo)
}

// acceptable reports whether tracked path q, fingerprinted old and found
// cur, may be as an unrevert that left left (placing the objects ids)
// made it. The object at q is the one it was: any change to it in place
// is taken as the unrevert's (its content, attributes, or another of its
// names, as the unrevert's steps change them and the aside area's links
// to them come and go). Another object, or none, is taken only where the
// unrevert put one of its own, or emptied the path, or beneath what it
// brought back whole.
func acceptable(q string, old, cur journal.Fingerprint, left map[string]uint64, ids map[uint64]bool) bool {
	if cur.Type != 0 && old.Type != 0 && cur.Ino == old.Ino {
		return true
	}
	for a := q; ; a = parentOf(a) {
		if id, ok := left[a]; ok {
			if a != q && id != 0 {
				return true // beneath what came back whole: what it holds
			}
			return cur.Type == 0 || ids[cur.Ino]
		}
		if a == "" {
			return false
		}
	}
}
