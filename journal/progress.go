package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// How far a rollback's run got is stored after every step, so that a
// crash is finished from there (package rollback: only the last step may
// run twice). Saving the rollback's record for it wrote a new version of
// the record into Badger per step — 150,000 for a large rollback, which
// Badger's flushes and compactions paid for in CPU and memory. So a
// step's progress is instead one small entry written in place into the
// file "progress" beside Badger: rollback id, run, next step, checksum.
// pwrite puts it in the kernel's page cache, where it survives a kill -9
// of the daemon as a commit does; with Options.Sync it is fdatasync'd
// too. The record's own Next is saved whenever its state changes; where
// a run stands is the greater of the two, for the run the entry names
// (Rollbacks).

const progressName = "progress"

// openProgress opens the progress file of the journal in dir.
func openProgress(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, progressName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return f, nil
}

// SaveProgress stores that the steps before next of r's current run are
// done. The caller holds the gate exclusively (one run at a time).
func (j *Journal) SaveProgress(r *Rollback, next int) error {
	if err := j.usable(); err != nil {
		return err
	}
	var b [28]byte
	binary.BigEndian.PutUint64(b[0:], r.ID)
	binary.BigEndian.PutUint64(b[8:], r.Run)
	binary.BigEndian.PutUint64(b[16:], uint64(next))
	binary.BigEndian.PutUint32(b[24:], crc32.ChecksumIEEE(b[:24]))
	if _, err := unix.Pwrite(int(j.progress.Fd()), b[:], 0); err != nil {
		return fmt.Errorf("journal: save rollback progress: %w", err)
	}
	if j.opts.Sync {
		if err := unix.Fdatasync(int(j.progress.Fd())); err != nil {
			return fmt.Errorf("journal: save rollback progress: %w", err)
		}
	}
	r.Next = next
	return nil
}

// applyProgress sets r.Next from the progress file if it names r's
// current run and is further on.
func (j *Journal) applyProgress(r *Rollback) {
	switch r.State {
	case RollbackRunning, RollbackUnreverting, RollbackPartial: // a retry goes on from its Next too
	default:
		return
	}
	var b [28]byte
	if n, _ := unix.Pread(int(j.progress.Fd()), b[:], 0); n != len(b) ||
		binary.BigEndian.Uint32(b[24:]) != crc32.ChecksumIEEE(b[:24]) {
		return // none yet, or torn by a power cut: the record's own Next stands
	}
	id, run, next := binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:]), int(binary.BigEndian.Uint64(b[16:]))
	if id == r.ID && run == r.Run && next > r.Next {
		r.Next = next
	}
}
