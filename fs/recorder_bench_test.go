package fs

import (
	"context"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
)

// BenchmarkCapturedWrite is what every WRITE to a file already captured
// in the epoch costs the recorder: a change, the inode's state, the
// first-touch and byte-range checks that find everything journaled.
func BenchmarkCapturedWrite(b *testing.B) {
	r, _ := testChange(b)
	st := &unix.Stat_t{Mode: syscall.S_IFREG | 0o644, Size: 1 << 20}
	c := r.begin(context.Background(), nil)
	journalAll(b, c, 0, 1<<20)
	c.end()
	src := bytesAt(1 << 20)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := r.begin(context.Background(), nil)
		s := c.state(7)
		if err := c.op.Attr(s, 7, "f", st, journal.CauseWrite); err != nil {
			b.Fatal(err)
		}
		off := int64(i%256) * 4096
		if err := c.op.Data(s, 7, "f", src, off, off+4096); err != nil {
			b.Fatal(err)
		}
		s.Unlock()
		c.end()
	}
}
