package journal

import (
	"fmt"
	"testing"
)

// TestFingerprintsOf: paths asked for in order are found whether they
// are next to each other, far apart (past the steps before a seek), or
// not kept at all, before, between and after those kept.
func TestFingerprintsOf(t *testing.T) {
	j := TestJournal(t, Options{Reserve: 1 << 20})
	set := map[string]Fingerprint{}
	for i := 0; i < 1000; i++ {
		set[fmt.Sprintf("d/f%04d", i)] = Fingerprint{Type: 0o100000, Ino: uint64(i + 1), Last: 1}
	}
	if err := j.SaveFingerprints(set, nil, 0); err != nil {
		t.Fatal(err)
	}
	ask := []string{"a", "d/f0000", "d/f0001", "d/f0001x", "d/f0002", "d/f0500", "d/f0533", "d/f0999", "e"}
	got, err := j.FingerprintsOf(ask)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ask {
		want, kept := set[p]
		if f, ok := got[p]; ok != kept || f != want {
			t.Errorf("%s: got %+v (%v), want %+v (%v)", p, f, ok, want, kept)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d found, want 6", len(got))
	}
}
