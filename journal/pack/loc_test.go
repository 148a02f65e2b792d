package pack

import (
	"errors"
	"testing"
)

func TestLocEncoding(t *testing.T) {
	for _, l := range []Loc{{Pack: 1, Off: HeaderSize, N: 0}, {Pack: 1 << 40, Off: 1 << 33, N: 1<<32 - 1}} {
		got, err := DecodeLoc(l.Encode())
		if err != nil || got != l {
			t.Errorf("%+v decodes to %+v, %v", l, got, err)
		}
	}
	for _, b := range [][]byte{nil, {2, 1, 8, 1}, {1, 1, 0, 1}, {1, 1, 8}, {1, 1, 8, 1, 0}, {1, 1, 8, 0x80, 0x80, 0x80, 0x80, 0x10}} {
		if _, err := DecodeLoc(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeLoc(%x): %v, want ErrCorrupt", b, err)
		}
	}
}

// FuzzDecodeLoc: no bytes make DecodeLoc panic, and what decodes
// encodes back to the same bytes.
func FuzzDecodeLoc(f *testing.F) {
	f.Add(Loc{Pack: 3, Off: 100, N: 7}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := DecodeLoc(b)
		if err != nil {
			return
		}
		again, err := DecodeLoc(l.Encode())
		if err != nil || again != l {
			t.Fatalf("%+v re-decodes to %+v, %v", l, again, err)
		}
	})
}

// PlanRepack takes the packs with the most unused bytes until no more
// than MaxUnused of what is left is unused.
func TestPlanRepack(t *testing.T) {
	const mb = 1 << 20
	uses := []Use{
		NewUse(1, 8*mb, 8*mb-HeaderSize), // full
		NewUse(2, 8*mb, 1*mb),            // mostly unused
		NewUse(3, 8*mb, 6*mb),
		NewUse(4, 8*mb, 7*mb),
	}
	plan := PlanRepack(uses)
	if len(plan) != 1 || plan[0].ID != 2 {
		t.Fatalf("plan %+v, want pack 2 alone", plan)
	}
	if plan := PlanRepack([]Use{NewUse(1, 8*mb, 8*mb-HeaderSize)}); len(plan) != 0 {
		t.Errorf("a full pack is repacked: %+v", plan)
	}
}
