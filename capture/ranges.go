package capture

import "sort"

// ToEnd, as the end of a byte range, means "to the end of the file",
// whatever its size: past any offset a file can have.
const ToEnd = int64(1 << 62)

// Span is the byte range [Lo, Hi).
type Span struct{ Lo, Hi int64 }

// Ranges is a set of byte ranges: the parts of a file whose pre-image
// is already journaled in this epoch (State), or that package fs has
// read afresh since a rollback rewrote the file. The zero value is the
// empty set. It is kept per block of the file
// (rangeBlock bytes), each block a short sorted list of disjoint spans:
// a random writer's tens of thousands of 4 KiB ranges in a large file
// (a database, fio) each cost a map lookup and a short list, where one
// sorted list of them all cost a copy of the list per insertion.
//
// Most files an epoch touches are small: their spans all lie in one
// block, kept inline (block first, spans one) with no map — a map of one
// entry costs ~350 bytes, 17 MiB for a turn that rewrote 50,000 files.
//
// A range longer than a block — a truncation's cut-off tail, which in a
// sparse file may be terabytes of holes — is kept whole, in wide: one
// span, where blocks would have cost a map entry per MiB. Writes reach
// the daemon at most a block at a time, so wide stays short.
type Ranges struct {
	first  int64           // the block one holds, if inline
	one    spans           // the spans of block first, while the set lies in one block
	blocks map[int64]spans // block number -> the set's spans in it, once it spans several
	wide   spans           // ranges longer than a block
}

// block returns the spans of block b, and whether the set has any there.
func (r *Ranges) block(b int64) (spans, bool) {
	if r.blocks == nil {
		return r.one, r.one != nil && b == r.first
	}
	s, ok := r.blocks[b]
	return s, ok
}

// held is how many blocks the set has spans in.
func (r *Ranges) held() int {
	if r.blocks == nil {
		if r.one != nil {
			return 1
		}
		return 0
	}
	return len(r.blocks)
}

const rangeBlock = 1 << 20

// spans is a set of disjoint, sorted, non-adjacent byte ranges.
type spans []Span

// Missing returns the parts of [lo, hi) not in the set, in order, each
// as long as it can be: a gap is not cut at block boundaries, since each
// gap becomes one record.
func (r *Ranges) Missing(lo, hi int64) []Span {
	if len(r.wide) == 0 {
		return r.blockMissing(lo, hi)
	}
	var out []Span
	for _, g := range r.wide.missing(lo, hi) {
		out = append(out, r.blockMissing(g.Lo, g.Hi)...)
	}
	return out
}

// blockMissing is missing, as far as the blocks' spans say.
func (r *Ranges) blockMissing(lo, hi int64) []Span {
	var out []Span
	gap := func(g Span) {
		if n := len(out); n > 0 && out[n-1].Hi == g.Lo {
			out[n-1].Hi = g.Hi
		} else {
			out = append(out, g)
		}
	}
	for lo < hi {
		b := lo / rangeBlock
		s, ok := r.block(b)
		if !ok {
			// Up to the next block the set holds anything in.
			end := hi
			if next, found := r.next(b, hi); found {
				end = next * rangeBlock
			}
			gap(Span{lo, end})
			lo = end
			continue
		}
		end := min(hi, (b+1)*rangeBlock)
		for _, g := range s.missing(lo, end) {
			gap(g)
		}
		lo = end
	}
	return out
}

// next returns the first block after b, and before the one holding
// hi-1 or that one, that the set holds spans in.
func (r *Ranges) next(b, hi int64) (int64, bool) {
	last := (hi - 1) / rangeBlock
	if r.blocks == nil {
		return r.first, r.one != nil && r.first > b && r.first <= last
	}
	if last-b <= int64(r.held()) {
		for k := b + 1; k <= last; k++ {
			if _, ok := r.blocks[k]; ok {
				return k, true
			}
		}
		return 0, false
	}
	best, found := last+1, false
	for k := range r.blocks {
		if k > b && k < best {
			best, found = k, true
		}
	}
	return best, found
}

// Add puts [lo, hi) in the set.
func (r *Ranges) Add(lo, hi int64) {
	if hi-lo > rangeBlock {
		r.wide.add(lo, hi)
		return
	}
	for lo < hi {
		b := lo / rangeBlock
		end := min(hi, (b+1)*rangeBlock)
		switch {
		case r.blocks == nil && (r.one == nil || b == r.first):
			r.first = b
			r.one.add(lo, end)
		default:
			if r.blocks == nil { // a second block: the inline one moves to the map
				r.blocks = map[int64]spans{r.first: r.one}
				r.one = nil
			}
			s := r.blocks[b]
			s.add(lo, end)
			r.blocks[b] = s
		}
		lo = end
	}
}

// missing returns the parts of [lo, hi) not in the set.
func (r spans) missing(lo, hi int64) []Span {
	var out []Span
	i := sort.Search(len(r), func(i int) bool { return r[i].Hi > lo })
	for ; lo < hi && i < len(r) && r[i].Lo < hi; i++ {
		if r[i].Lo > lo {
			out = append(out, Span{lo, r[i].Lo})
		}
		lo = max(lo, r[i].Hi)
	}
	if lo < hi {
		out = append(out, Span{lo, hi})
	}
	return out
}

// add puts [lo, hi) in the set, in place.
func (r *spans) add(lo, hi int64) {
	if lo >= hi {
		return
	}
	s := *r
	i := sort.Search(len(s), func(i int) bool { return s[i].Hi >= lo })
	j := i
	for j < len(s) && s[j].Lo <= hi {
		lo = min(lo, s[j].Lo)
		hi = max(hi, s[j].Hi)
		j++
	}
	switch {
	case i == j: // a new span at i
		s = append(s, Span{})
		copy(s[i+1:], s[i:])
		s[i] = Span{lo, hi}
	default: // s[i:j] merge into one
		s[i] = Span{lo, hi}
		s = append(s[:i+1], s[j:]...)
	}
	*r = s
}

// Remove takes [lo, hi) out of the set: a pre-image journaled and then
// withdrawn (Op.Withdraw).
func (r *Ranges) Remove(lo, hi int64) {
	r.wide.remove(lo, hi)
	for lo < hi {
		b := lo / rangeBlock
		if _, ok := r.block(b); !ok {
			next, found := r.next(b, hi) // past the blocks the set has nothing in
			if !found {
				return
			}
			lo = next * rangeBlock
			continue
		}
		end := min(hi, (b+1)*rangeBlock)
		switch {
		case r.blocks == nil:
			if r.one != nil && b == r.first {
				r.one.remove(lo, end)
				if len(r.one) == 0 {
					r.one = nil
				}
			}
		default:
			if s, ok := r.blocks[b]; ok {
				s.remove(lo, end)
				if len(s) == 0 {
					delete(r.blocks, b)
				} else {
					r.blocks[b] = s
				}
			}
		}
		lo = end
	}
}

// remove takes [lo, hi) out of the set, in place.
func (r *spans) remove(lo, hi int64) {
	if lo >= hi {
		return
	}
	var out spans
	for _, s := range *r {
		if s.Hi <= lo || s.Lo >= hi {
			out = append(out, s)
			continue
		}
		if s.Lo < lo {
			out = append(out, Span{s.Lo, lo})
		}
		if s.Hi > hi {
			out = append(out, Span{hi, s.Hi})
		}
	}
	*r = out
}
