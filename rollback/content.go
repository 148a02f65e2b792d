package rollback

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/sparse"
)

// writeBack puts the pre-image of data record r into f, the file it
// was taken from (or a copy being made of it): the bytes the journal
// holds, each at its offset, and holes again where the record lists
// holes. Nothing loops over a hole's bytes: a 4 TiB hole is one
// fallocate. Where f's filesystem cannot punch holes, the data f has in
// them is overwritten with zeros instead — the same bytes, not the
// same space — and log (if not nil) says so. f's size is left as it
// is, but for bytes written past its end: an attribute record puts the
// size back.
func writeBack(j *journal.Journal, r *journal.Record, f *os.File, log *slog.Logger) error {
	err := j.ReadContent(r, func(off int64, b []byte) error {
		_, err := f.WriteAt(b, off)
		return err
	})
	if err != nil {
		return err
	}
	for _, h := range r.Holes {
		wrote, err := sparse.Zero(f, h.Off, h.Len)
		if err != nil {
			return fmt.Errorf("put back the hole [%d, %d): %w", h.Off, h.Off+h.Len, err)
		}
		if wrote && log != nil {
			log.Warn("the filesystem cannot punch holes: zeros written where the pre-image had a hole",
				"path", r.Path, "off", h.Off, "len", h.Len)
		}
	}
	return nil
}
