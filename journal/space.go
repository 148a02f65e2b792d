package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/cowfs/cowfs/journal/pack"
)

// Two limits bound the journal, and both are checked before a record is
// stored: its size (Options.MaxSize) and the free space of its
// filesystem, less a reserve. When a record would not fit, the oldest
// turns leave the window early, one at a time, each reported as a
// turn_pruned event with the reason — until it fits or only the latest
// turn (the open one, if any) is left, or at once if it could not fit
// even with every turn gone: then the record is refused with
// ErrNoSpace, the change it would have recorded fails with ENOSPC, and
// nothing is changed unrecorded. Work goes on as soon as space is
// freed: nothing is latched.
//
// The reserve is for Badger, which writes through memory mappings: a
// write into a mapping on a full filesystem kills the process (SIGBUS)
// instead of failing. What Badger may write before the next check is
// the rest of its memtable log and, when that fills, a new log, a flush
// of the memtable to a table and a compaction that rewrites tables
// before deleting them: two memtables and twice the tables it has
// (badgerReserve). Content goes to packs with write(2), which fails
// cleanly. A small journal thus keeps ~8 MiB in reserve, not a fixed
// 64 MiB that left a small filesystem refusing even rm and mkdir.
//
// Pruning writes to Badger too. When something else has filled the
// filesystem to less than two memtables free, no turn leaves the
// window: the change is refused, and every turn stays.
//
// The check reads the free space with statfs, afresh for each record
// unless more than plenty is free (freespace.go): a reading even 50 ms
// old once let a record through after another process had filled the
// filesystem, and Badger's next write through its mappings could have
// killed the daemon (TestJournalFilesystemFull).

// Reasons a turn leaves the window, in turn_pruned events.
const (
	PruneWindow  = "window"           // Options.Window turns are newer
	PruneMaxSize = "max_journal_size" // the journal reached Options.MaxSize
	PruneNoSpace = "disk_full"        // its filesystem had no room left
)

// badgerReserve is the free space Badger needs with tables of lsm bytes.
func badgerReserve(lsm int64) int64 { return 2*memTableSize + 2*lsm }

// measure walks the journal's directory: bytes on disk, and those of
// Badger's tables.
func (j *Journal) measure() (total, lsm int64) {
	filepath.WalkDir(j.dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) == nil {
				total += st.Blocks * 512
				if filepath.Ext(p) == ".sst" {
					lsm += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return total, lsm
}

// remeasure resets the running estimate of the journal's size.
func (j *Journal) remeasure() {
	total, lsm := j.measure()
	j.used.Store(total)
	j.lsm.Store(lsm)
}

// reserve is the free space the journal's filesystem must keep.
func (j *Journal) reserve() int64 {
	if j.opts.Reserve > 0 {
		return j.opts.Reserve
	}
	return badgerReserve(j.lsm.Load())
}

// recordOverhead is what a record may take in the journal besides its
// paths, xattr value and content: its key, encoding and index entries.
const recordOverhead = 4096

// need is what storing rec with data bytes of content may add to the
// journal, at most: that content uncompressed, entry headers, and the
// record. Holes cost nothing but their place in the record.
func need(rec *Record, data int64) int64 {
	n := int64(recordOverhead) + int64(len(rec.Path)+len(rec.Path2)+len(rec.XattrValue))
	if rec.Kind == KindData {
		n += data + (data/pack.MinChunk+1)*(pack.EntryHeader+64)
	}
	return n
}

// room makes room for n more bytes, pruning turns early if it must
// (see the top of this file). g is the caller's gate.
func (j *Journal) room(g Gate, n int64) error {
	for {
		why, detail, err := j.fits(n, g.exclusive)
		if err != nil || why == "" {
			return err
		}
		pruned, err := j.pruneEarly(g, n, why)
		if err != nil {
			return err
		}
		if !pruned {
			return fmt.Errorf("%w (%w): %s, and no turn older than the latest can leave the window", ErrNoSpace, syscall.ENOSPC, detail)
		}
	}
}

// fits says why n more bytes do not fit ("" if they do), and in words.
// Records made under the exclusive gate (exclusive set) may take the
// journal past its size bound: a rollback's own make it undoable and go
// when the next turn begins; a rescan's are small.
func (j *Journal) fits(n int64, exclusive bool) (why, detail string, err error) {
	if max := j.opts.maxSize(); max > 0 && !exclusive {
		if used := j.used.Load(); used+n > max {
			return PruneMaxSize, fmt.Sprintf("the journal takes %d bytes, %d more may be needed, and --max-journal-size is %d", used, n, max), nil
		}
	}
	reserve := j.reserve()
	free, err := j.space.take(n, reserve)
	if err != nil {
		// The directory is gone or unreadable: nothing more can be
		// recorded there. The health check says best why.
		if cerr := j.check(); cerr != nil {
			err = cerr
		}
		j.fail(err)
		return "", "", j.Broken()
	}
	if free-n < reserve {
		return PruneNoSpace, fmt.Sprintf("%d bytes are free on the journal's filesystem, %d more may be needed and %d are kept for Badger", free, n, reserve), nil
	}
	return "", "", nil
}

func freeOf(st *syscall.Statfs_t) int64 { return int64(st.Bavail) * st.Bsize }

// free returns the free space of the journal's filesystem (0 if unknown).
func (j *Journal) free() int64 {
	n, _ := j.statfs()
	return n
}

// statfs reads the free space of the journal's filesystem.
func (j *Journal) statfs() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(j.dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", j.dir, err)
	}
	return freeOf(&st), nil
}

// pruneEarly makes room for n bytes that do not fit for reason why: it
// drops the oldest turn that may go and reclaims its space. It reports
// false if there is still no room and no turn may go: only the latest
// is left, or the rest are needed by a rollback — running (g is then
// its gate), or done and still undoable.
func (j *Journal) pruneEarly(g Gate, n int64, why string) (bool, error) {
	drop := j.dropAside.Load()
	if drop == nil {
		return false, nil
	}
	j.pruneMu.Lock()
	defer j.pruneMu.Unlock()
	if now, _, err := j.fits(n, g.exclusive); err != nil || now == "" {
		return true, err // another change made room meanwhile
	}
	if j.hopeless(n, why) {
		return false, nil // no turn leaves for a record that cannot fit anyway
	}
	if why == PruneNoSpace && j.free() < badgerReserve(0) {
		// Pruning writes to Badger too (deletions, and maybe a
		// memtable flush and a new memtable log): with less free than
		// two memtables, something else filled the filesystem, and
		// writing could kill the process. Refuse instead; the turns
		// stay.
		return false, nil
	}
	turns, err := j.Turns()
	if err != nil {
		return false, err
	}
	keep := len(turns) - 1 // drop the oldest
	rbs, err := j.Rollbacks()
	if err != nil {
		return false, err
	}
	for _, rb := range rbs {
		for i, t := range turns {
			if t.Num >= rb.Target {
				keep = max(keep, len(turns)-i)
				break
			}
		}
	}
	if keep < 1 || keep >= len(turns) {
		return false, nil
	}
	gone := turns[len(turns)-keep-1]
	if err := j.leaveWindow(keep, why, *drop, true); err != nil {
		return false, err
	}
	if err := j.reclaim(); err != nil {
		return false, err
	}
	err = j.db.Update(func(txn *badger.Txn) error {
		return setJSON(txn, earlyKey, EarlyPrune{Through: gone.Num, Reason: why, Time: time.Now().UTC()})
	})
	return true, err
}

// hopeless reports whether n bytes would not fit even with every turn
// gone: more than the size bound, or than the free space and all the
// journal takes, less the reserve.
func (j *Journal) hopeless(n int64, why string) bool {
	if why == PruneMaxSize {
		return n > j.opts.maxSize()
	}
	return n > j.free()+j.used.Load()-j.reserve()
}

// SetDropAside gives the journal the function that frees an aside
// entry (as Prune's argument), so that turns can leave the window early
// when it is full. Until it is set, a full journal refuses records.
func (j *Journal) SetDropAside(drop func(name string) error) {
	j.dropAside.Store(&drop)
}

// EarlyPrune says when turns last left the window early.
type EarlyPrune struct {
	Through uint64    `json:"through"` // the newest turn that left
	Reason  string    `json:"reason"`  // PruneMaxSize or PruneNoSpace
	Time    time.Time `json:"time"`
}

var earlyKey = []byte{prefixEarly}

// LastEarlyPrune returns when turns last left the window early, if ever.
func (j *Journal) LastEarlyPrune() (EarlyPrune, bool) {
	var e EarlyPrune
	var ok bool
	err := j.db.View(func(txn *badger.Txn) (err error) {
		ok, err = getJSON(txn, earlyKey, &e)
		return err
	})
	return e, ok && err == nil
}

// MaxSize is the size bound in effect, 0 for none.
func (j *Journal) MaxSize() int64 { return j.opts.maxSize() }
