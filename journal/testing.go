package journal

import "testing"

// TestJournal opens a journal in a temporary directory for a test and
// closes it when the test ends.
func TestJournal(t testing.TB, opts Options) *Journal {
	t.Helper()
	j, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("open journal: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}
