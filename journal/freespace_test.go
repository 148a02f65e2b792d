package journal

import (
	"errors"
	"testing"
)

// A reading stands for later records only while more than plenty is
// free beyond them and the reserve; near full, each record reads.
func TestFreeSpaceReading(t *testing.T) {
	const reserve = 8 << 20
	var reads int
	var free, used int64 // the filesystem's free space: free-used
	var fail error
	s := freeSpace{read: func() (int64, error) { reads++; return free - used, fail }}

	free = 4 << 30
	for i := range 100 {
		got, err := s.take(4096, reserve)
		if err != nil || got > free || got < free-int64(i)*4096 {
			t.Fatalf("take %d: %d, %v (free %d)", i, got, err, free)
		}
	}
	if reads >= 10 {
		t.Errorf("%d statfs for 100 records with 4 GiB free", reads)
	}

	// Records that bring the headroom under plenty read afresh.
	reads, free = 0, plenty+reserve+(64<<20)
	s.at = s.at.AddDate(-1, 0, 0) // stale
	for range 8 {
		s.take(16<<20, reserve)
		used += 16 << 20
	}
	if reads < 5 {
		t.Errorf("%d statfs for 8 records of 16 MiB, 64 MiB above plenty", reads)
	}

	reads, free, used = 0, 100<<20, 0
	for range 10 {
		s.take(4096, reserve)
	}
	if reads != 10 {
		t.Errorf("%d statfs for 10 records with 100 MiB free, want 10", reads)
	}

	// An error is returned, and the next record reads again.
	fail = errors.New("gone")
	if _, err := s.take(4096, reserve); err == nil {
		t.Fatal("read error not returned")
	}
	fail, free, reads = nil, 4<<30, 0
	s.take(4096, reserve)
	s.take(4096, reserve)
	if reads != 1 {
		t.Errorf("%d statfs after an error and with room again, want 1", reads)
	}
}
