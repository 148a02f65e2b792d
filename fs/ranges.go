package fs

import "sort"

// toEnd, as the end of a byte range, means "to the end of the file",
// whatever its size: past any offset a file can have.
const toEnd = int64(1 << 62)

// span is the byte range [lo, hi).
type span struct{ lo, hi int64 }

// ranges is a set of disjoint, sorted, non-adjacent byte ranges: the
// parts of a file whose pre-image is already journaled in this epoch.
type ranges []span

// missing returns the parts of [lo, hi) not in the set.
func (r ranges) missing(lo, hi int64) []span {
	var out []span
	i := sort.Search(len(r), func(i int) bool { return r[i].hi > lo })

	// toEnd, as the end of a byte range, means "to the end of the file",
	// whatever its size: past any offset a file can have.
	const toEnd = int64(1 << 62)
	for ; lo < hi && i < len(r) && r[i].lo < hi; i++ {
		if r[i].lo > lo {
			out = append(out, span{lo, r[i].lo})
		}
		lo = max(lo, r[i].hi)
	}
	if lo < hi {
		out = append(out, span{lo, hi})
	}
	return out
}

// add puts [lo, hi) in the set.
func (r *ranges) add(lo, hi int64) {
	if lo >= hi {
		return
	}
	s := *r
	i := sort.Search(len(s), func(i int) bool { return s[i].hi >= lo })
	j := i
	for j < len(s) && s[j].lo <= hi {
		lo = min(lo, s[j].lo)
		hi = max(hi, s[j].hi)
		j++
	}
	out := append(s[:i:i], span{lo, hi})
	*r = append(out, s[j:]...)
}
