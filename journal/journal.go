package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/cowfs/cowfs/journal/pack"
	"github.com/cowfs/cowfs/journal/wal"
)

// FormatVersion is the version of the on-disk format this package
// writes and reads (docs/journal-format.md).
const FormatVersion = 7

type meta struct {
	Format  int       `json:"format"`
	Created time.Time `json:"created"`
}

// Journal is an open journal. Its methods are safe for concurrent use.
type Journal struct {
	db   *store   // Badger, caught up with the record log before each use
	wal  *wal.Log // where records are written first (package wal; walstore.go)
	dir  string
	lock *os.File // flock'd; released on Close
	opts Options
	log  *slog.Logger

	// gate orders changes against turn boundaries and rollbacks: a
	// change holds it shared from its record until its operation has
	// reached the backing directory; beginning or ending a turn and
	// rolling back hold it exclusively. So a turn owns exactly the
	// records whose operations happened while it was open.
	gate sync.RWMutex

	// Written under gate held exclusively, read under gate (shared or
	// exclusive) or mu.
	open  *Turn  // the open turn, or nil
	step  string // the open turn's current step
	epoch uint64 // increments at every turn boundary
	// epochSeq is the sequence number at which the epoch began: the
	// next record's then (pin.go).
	epochSeq uint64

	mu       sync.Mutex // serialises turn bookkeeping
	nextTurn uint64

	nextSeq atomic.Uint64

	// content is held shared while content is stored and referenced,
	// exclusively while a prune deletes chunks: a chunk found present
	// by deduplication cannot vanish before the record naming it is
	// committed.
	content sync.RWMutex

	// kept is held shared by each Pin, exclusively while records are
	// deleted (pruned, settled, unreverted): a reader of the past keeps
	// the records it reads (pin.go).
	kept sync.RWMutex

	packs     *pack.Dir     // where content lives (package pack)
	chunks    *pack.Filter  // which chunks the index may hold
	present   presentChunks // chunks found in the index (present.go)
	progress  *os.File      // how far the running rollback got (progress.go)
	reclaimMu sync.Mutex    // one reclaim at a time (reclaim.go)
	pruneMu   sync.Mutex    // one prune at a time, early or not (space.go)

	// Running estimates of the bytes on disk and of Badger's tables,
	// measured at open and after each reclaim, counted up by appends
	// between (space.go).
	used, lsm atomic.Int64
	space     freeSpace // the last reading of the free space (freespace.go)
	dropAside atomic.Pointer[func(string) error]

	notify notifier

	codec *pack.Codec // compresses chunks and blobs

	closed   atomic.Bool
	health   health
	trimStop chan struct{} // resident.go
	lookups  atomic.Uint64 // Record calls, for trimMapped
}

// Open opens the journal in dir, creating it (mode 0700: pre-images can
// hold secrets) if needed. Only one process may have a journal open.
func Open(dir string, opts Options) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	db, err := badger.Open(badgerOptions(filepath.Join(dir, "badger"), opts))
	if err != nil {
		lock.Close()
		// Cowfs wrote nothing anywhere yet: say what is wrong and what to
		// do, and leave both the journal and the workspace as they are.
		return nil, fmt.Errorf("%w: the journal in %s cannot be opened (%v); nothing in the workspace was touched. "+
			"Keep it for inspection and start a new one: mv %s %s.unreadable", ErrUnreadable, dir, err, dir, dir)
	}
	j := &Journal{dir: dir, lock: lock, opts: opts, log: opts.Logger, chunks: pack.NewFilter()}
	j.space.read = j.statfs
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	// The format first, then the record log: what a crash left in it
	// beyond Badger's note is applied before anything else reads Badger.
	j.db = &store{DB: db, fail: j.fail}
	if err := j.initMeta(); err != nil {
		db.Close()
		lock.Close()
		return nil, err
	}
	if j.wal, err = wal.Open(dir, logStore{db}, wal.Options{Sync: opts.Sync, WriteFailed: j.refused}); err != nil {
		db.Close()
		lock.Close()
		return nil, err
	}
	j.db.log = j.wal
	// undo closes what was opened, in reverse order, when a later step
	// fails.
	var opened []func()
	undo := func() {
		for i := len(opened) - 1; i >= 0; i-- {
			opened[i]()
		}
		j.wal.Close()
		db.Close()
		lock.Close()
	}
	if j.packs, err = pack.Open(filepath.Join(dir, packDirName), opts.Sync); err != nil {
		undo()
		return nil, err
	}
	opened = append(opened, func() { j.packs.Close() })
	if j.progress, err = openProgress(dir); err != nil {
		undo()
		return nil, err
	}
	opened = append(opened, func() { j.progress.Close() })
	if err := j.init(); err != nil {
		undo()
		return nil, err
	}
	if err := j.watch(); err != nil {
		undo()
		return nil, err
	}
	j.trimStop = make(chan struct{})
	go j.trimmer(j.trimStop)
	return j, nil
}

// lockDir takes an exclusive lock on dir/lock, which holds the pid of
// the process that has the journal open.
func lockDir(dir string) (*os.File, error) {
	p := filepath.Join(dir, "lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(p)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if pid := strings.TrimSpace(string(b)); pid != "" {
				return nil, fmt.Errorf("%w (pid %s): %s", ErrLocked, pid, dir)
			}
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("journal: lock %s: %w", p, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

func (j *Journal) init() error {
	var err error
	if j.codec, err = pack.NewCodec(); err != nil {
		return err
	}
	if err := j.loadCounters(); err != nil {
		return err
	}
	if err := j.sweepOrphanChunks(); err != nil {
		return err
	}
	if err := j.finishSettling(); err != nil {
		return err
	}
	if err := j.sweepBlobs(); err != nil {
		return err
	}
	j.remeasure()
	return nil
}

func (j *Journal) initMeta() error {
	return j.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(metaKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			b, _ := json.Marshal(meta{Format: FormatVersion, Created: time.Now().UTC()})
			return txn.Set(metaKey, b)
		}
		if err != nil {
			return fmt.Errorf("journal: read format: %w", err)
		}
		var m meta
		if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &m) }); err != nil {
			return fmt.Errorf("%w: unreadable metadata: %v", ErrFormat, err)
		}
		if m.Format == 1 {
			return fmt.Errorf("%w: journal has format 1, which kept content inside Badger and never gave its space back; this cowfs reads format %d. Unmount with the cowfs that made it, then delete the journal directory %s (the undo history goes with it)", ErrFormat, FormatVersion, j.dir)
		}
		if m.Format >= 2 && m.Format < FormatVersion {
			// Formats 3 and 4 only add keys and files (rollback plans
			// in parts, blob.go; the record log, package wal), and formats
			// 5, 6 and 7 a record version each (holes; flags; the
			// command line, codec.go);
			// each reads what the ones before wrote as it is. Marked as this version, the
			// journal is refused by a cowfs that could not read it.
			m.Format = FormatVersion
			b, _ := json.Marshal(m)
			return txn.Set(metaKey, b)
		}
		if m.Format != FormatVersion {
			return fmt.Errorf("%w: journal has format %d, this cowfs reads %d", ErrFormat, m.Format, FormatVersion)
		}
		return nil
	})
}

// loadCounters finds the next record sequence and turn number, and the
// turn left open by the previous process, if any.
func (j *Journal) loadCounters() error {
	return j.db.View(func(txn *badger.Txn) error {
		var c counters
		if _, err := getJSON(txn, countersKey, &c); err != nil {
			return err
		}
		j.nextSeq.Store(lastKeyNum(txn, prefixRecord) + 1)
		// Nothing is journaled yet in this process: its first epoch
		// begins here, open turn or not.
		j.epochSeq = j.nextSeq.Load()
		j.nextTurn = max(lastKeyNum(txn, prefixTurn)+1, c.NextTurn)
		if last := lastKeyNum(txn, prefixTurn); last > 0 {
			t, err := getTurn(txn, last)
			if err != nil {
				return err
			}
			if t.Open() {
				j.open = &t
			}
		}
		return nil
	})
}

// lastKeyNum returns the number in the greatest key with prefix p, or 0.
func lastKeyNum(txn *badger.Txn, p byte) uint64 {
	it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: []byte{p}})
	defer it.Close()
	it.Seek(numKey(p, ^uint64(0)))
	if !it.ValidForPrefix([]byte{p}) {
		return 0
	}
	return keyNum(it.Item().Key())
}

// Window is the number of turns kept.
func (j *Journal) Window() int { return j.opts.window() }

// Close closes the journal. Appends after Close fail with ErrClosed.
func (j *Journal) Close() error {
	if j.closed.Swap(true) {
		return nil
	}
	// Wait for changes in flight to finish their records — unless the
	// journal is unusable: then one may be stuck in Badger for ever.
	if j.lockGate() {
		defer j.gate.Unlock()
	}
	j.closeHealth()
	close(j.trimStop)
	done := make(chan error, 1)
	go func() {
		// What the log holds reaches Badger first: the next open then
		// has nothing to replay.
		err := j.wal.Close()
		if cerr := j.db.DB.Close(); err == nil || errors.Is(err, ErrClosed) {
			err = cerr
		}
		done <- err
	}()
	var err error
	if j.Broken() == nil {
		err = <-done
	} else {
		// Badger may retry writing into a directory that is gone for
		// ever; the process must still be able to stop.
		select {
		case err = <-done:
		case <-time.After(brokenCloseWait):
			err = fmt.Errorf("gave up waiting for Badger to close an unusable journal")
		}
	}
	if perr := j.packs.Close(); err == nil && perr != nil {
		err = perr
	}
	j.progress.Close()
	j.codec.Close()
	j.lock.Close()
	if err != nil {
		return fmt.Errorf("journal: close: %w", err)
	}
	return nil
}

// lockGate takes the gate exclusively and reports true; for an
// unusable journal it gives up after brokenCloseWait and reports false.
func (j *Journal) lockGate() bool {
	if j.Broken() == nil {
		j.gate.Lock()
		return true
	}
	locked := make(chan struct{})
	go func() {
		j.gate.Lock()
		close(locked)
	}()
	select {
	case <-locked:
		return true
	case <-time.After(brokenCloseWait):
		return false // the goroutine keeps waiting; the process is ending
	}
}

// brokenCloseWait bounds Close of an unusable journal.
const brokenCloseWait = 3 * time.Second
