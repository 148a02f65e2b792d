package capture

import (
	"math/rand/v2"
	"testing"
)

// spans against a bitmap model.
func TestSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 2000; iter++ {
		var r spans
		var model [64]bool
		for op := 0; op < 10; op++ {
			lo := rng.Int64N(64)
			hi := lo + rng.Int64N(64-lo+1)
			// missing must list exactly the unset bytes of [lo, hi).
			var got [64]bool
			for _, s := range r.missing(lo, hi) {
				if s.Lo >= s.Hi {
					t.Fatalf("empty span %v", s)
				}
				for b := s.Lo; b < s.Hi; b++ {
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
				if r[i-1].Hi >= r[i].Lo {
					t.Fatalf("not disjoint and sorted: %v", r)
				}
			}
		}
	}
}

// Ranges against a model of the bytes set, in a file of a few blocks
// with ranges that cross them: missing lists exactly what is not set,
// with no two gaps adjacent (each would become a record of its own).
func TestRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const size = 5*rangeBlock + 77
	// Spans of the model, as a sorted list of disjoint spans (the set's
	// meaning, in the simplest form).
	for iter := 0; iter < 300; iter++ {
		var r Ranges
		var model spans
		for op := 0; op < 30; op++ {
			lo := rng.Int64N(size)
			hi := lo + rng.Int64N(min(size-lo, 3*rangeBlock)+1)
			if rng.IntN(4) == 0 { // small, as a random writer's
				hi = min(size, lo+rng.Int64N(8192))
			}
			got := r.Missing(lo, hi)
			want := model.missing(lo, hi)
			if len(got) != len(want) {
				t.Fatalf("missing(%d, %d) = %v, want %v", lo, hi, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("missing(%d, %d) = %v, want %v", lo, hi, got, want)
				}
			}
			r.Add(lo, hi)
			model.add(lo, hi)
		}
		if got := r.Missing(0, ToEnd); len(got) == 0 || got[len(got)-1].Hi != ToEnd {
			t.Fatalf("missing to the end: %v", got)
		}
	}
}

// BenchmarkRandomRanges adds the ranges of 4 KiB writes at random
// places in a 256 MiB file, as fio --rw=randwrite does.
func BenchmarkRandomRanges(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	offs := make([]int64, 16384)
	for i := range offs {
		offs[i] = rng.Int64N(65536) * 4096
	}
	for b.Loop() {
		var r Ranges
		for _, o := range offs {
			for _, g := range r.Missing(o, o+4096) {
				r.Add(g.Lo, g.Hi)
			}
		}
	}
}

// remove against a model of the bytes set, across blocks: what a
// withdrawn pre-image takes out (Op.Withdraw) is missing again, and
// nothing else is. Bytes are checked at every edge the operations
// made, where a mistake would show.
func TestRangesRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const size = 3*rangeBlock + 13
	type op struct {
		Lo, Hi int64
		add    bool
	}
	for iter := 0; iter < 200; iter++ {
		var r Ranges
		var ops []op
		for range 20 {
			lo := rng.Int64N(size)
			o := op{lo, lo + rng.Int64N(min(size-lo, 2*rangeBlock)+1), rng.IntN(3) != 0}
			if o.add {
				r.Add(o.Lo, o.Hi)
			} else {
				r.Remove(o.Lo, o.Hi)
			}
			ops = append(ops, o)
		}
		for _, o := range ops {
			for _, b := range []int64{o.Lo - 1, o.Lo, o.Hi - 1, o.Hi} {
				if b < 0 || b >= size {
					continue
				}
				set := false
				for _, p := range ops {
					if b >= p.Lo && b < p.Hi {
						set = p.add
					}
				}
				if missing := len(r.Missing(b, b+1)) > 0; missing == set {
					t.Fatalf("iteration %d: byte %d set %v, but missing %v (ops %v)", iter, b, set, missing, ops)
				}
			}
		}
	}
}

// TestRangesHugeSpan: the cut-off tail of a 4 TiB sparse file is one
// span, not a map entry per block; what is missing around it is still
// exact, and withdrawing it (a truncation that failed) is as cheap.
func TestRangesHugeSpan(t *testing.T) {
	var r Ranges
	r.Add(100, 200)
	r.Add(350, 4<<40)
	if r.held() > 1 {
		t.Fatalf("a 4 TiB span takes %d blocks of the set", r.held())
	}
	got := r.Missing(0, ToEnd)
	want := []Span{{0, 100}, {200, 350}, {4 << 40, ToEnd}}
	if len(got) != len(want) {
		t.Fatalf("missing: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("missing: %v, want %v", got, want)
		}
	}
	r.Remove(350, 4<<40)
	if got := r.Missing(0, ToEnd); len(got) != 2 || got[1] != (Span{200, ToEnd}) {
		t.Fatalf("missing after the withdrawal: %v", got)
	}
}
