package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cowfs/cowfs/journal/pack"
)

// Usage is the space a journal takes and has.
type Usage struct {
	// Bytes is what the journal's files take on disk (allocated
	// blocks): Badger's files, the packs, the lock.
	Bytes int64
	// Content is the compressed content the window's records need: the
	// pack entries the index names. Packs hold at most 1.25 times it
	// after a reclaim (reclaim.go), plus the pack being written.
	Content int64
	// Packs is the number of pack files.
	Packs int
	// Free is the space left on the journal's filesystem for an
	// unprivileged writer.
	Free int64
}

// Usage measures the journal's space.
func (j *Journal) Usage() (Usage, error) {
	u := Usage{Bytes: j.Size()}
	err := j.eachLoc(func(_ [32]byte, l pack.Loc) error {
		u.Content += l.Size()
		return nil
	})
	if err != nil {
		return u, fmt.Errorf("journal: usage: %w", err)
	}
	ps, err := j.packs.List()
	if err != nil {
		return u, err
	}
	u.Packs = len(ps)
	u.Free = j.free()
	return u, nil
}

// Size returns the bytes the journal's files take on disk (allocated
// blocks: Badger's files are sparse until written).
func (j *Journal) Size() int64 {
	var n int64
	filepath.WalkDir(j.dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) == nil {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}
