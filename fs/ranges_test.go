package fs

import (
	"math/rand/v2"
	"testing"
)

// ranges against a bitmap model.
func TestRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 2000; iter++ {
		var r ranges
		var model [64]bool
		for op := 0; op < 10; op++ {
			lo := rng.Int64N(64)
			hi := lo + rng.Int64N(64-lo+1)
			// missing must list exactly the unset bytes of [lo, hi).
			var got [64]bool
			for _, s := range r.missing(lo, hi) {
				if s.lo >= s.hi {
					t.Fatalf("empty span %v", s)
				}
				for b := s.lo; b < s.hi; b++ {
					got[b] = true
				}
			}
			for b := int64(0); b < 64; b++ {
				want := b >= lo && b < hi && !model[b]
				if got[b] != want {
					t.Fatalf("missing(%d,%d) of %v: byte %d got %v want %v", lo, hi, r, b, got[b], want)
				}
			}
			r.add(lo, hi)
			for b := lo; b < hi; b++ {
				model[b] = true
			}
			for i := 1; i < len(r); i++ {
				if r[i-1].hi >= r[i].lo {
					t.Fatalf("not disjoint and sorted: %v", r)
				}
			}
		}
	}
}
