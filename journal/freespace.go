package journal

import (
	"sync"
	"time"
)

// Where the journal's filesystem has plenty of room, one statfs stands
// for the records that follow it for a moment, less what they may
// take; where it has not, every record reads the free space afresh.
//
// A reading that stands for later records lets one through after
// something else has taken that space meanwhile. Near full, that is
// what the per-record check is for (a file filling the filesystem,
// then a change: TestJournalFilesystemFull), so no reading stands
// there. With more than plenty free, something else would have to
// write that much within freshFor — ~10 GB/s — before a record that a
// fresh reading would have refused got through; and even then Badger's
// reserve (space.go) is still there, since the record's bytes were
// counted against plenty, not against it. The per-record check never
// covered the other order anyway (the filesystem filled after a
// record's check, before Badger flushes it).
//
// A statfs per record was a measurable share of the daemon's work on
// random 4 KiB writes into an older file.
const (
	freshFor = 100 * time.Millisecond
	plenty   = 1 << 30
)

// freeSpace is the last reading of the free space of the journal's
// filesystem.
type freeSpace struct {
	mu   sync.Mutex
	at   time.Time // when it was read; zero: never, or not to be used
	left int64     // bytes free then, less what records may have taken since
	read func() (int64, error)
}

// take returns the free bytes of the journal's filesystem as n more
// are about to be stored with reserve kept: from the last reading if it
// stands for them, else read afresh. Either way n counts as taken.
func (s *freeSpace) take(n, reserve int64) (int64, error) {
	now := time.Now()
	s.mu.Lock()
	if !s.at.IsZero() && now.Sub(s.at) < freshFor && s.left-n-reserve >= plenty {
		free := s.left
		s.left -= n
		s.mu.Unlock()
		return free, nil
	}
	s.mu.Unlock()
	// Read outside the lock: with little room every record reads, and
	// concurrent writers must not queue behind each other's statfs.
	free, err := s.read()
	s.mu.Lock()
	if err != nil {
		s.at = time.Time{}
	} else if now.After(s.at) {
		s.at, s.left = now, free-n
	}
	s.mu.Unlock()
	return free, err
}
