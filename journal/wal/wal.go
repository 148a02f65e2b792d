package wal

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	walPrefix   = "log."
	walRotate   = 8 << 20 // bytes of log after which a fully applied log is replaced
	applyEvery  = 50 * time.Millisecond
	entryHeader = 8       // length and CRC-32C of an entry
	maxEntry    = 1 << 30 // sanity bound when reading
	opSet       = 0
	opDelete    = 1
)

// ApplyOps is how many pending operations wake the applier; it also
// wakes every 50ms if any are pending.
const ApplyOps = 2048

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrBroken: an entry could not be written whole, nor cut back off the
// log; nothing more is logged, since the next open would drop it and
// everything after it.
var ErrBroken = errors.New("the record log holds a cut entry")

// Op is one blind write of an entry: a set of Key to Val, or a delete.
type Op struct {
	Delete   bool
	Key, Val []byte
	// Lookup: until the store has this set, Pending(Key) answers
	// with Val — for a value a writer must find while it is only in
	// the log (the journal's index entries of new chunks).
	Lookup bool
}

// Mark is how far the log is applied to the store: a generation (log
// file) and the offset in it up to which its entries are applied.
type Mark struct {
	Gen uint64
	Off int64
}

// Store is what the log applies its entries to. The log calls it from
// one goroutine at a time.
type Store interface {
	// Write applies ops, blind sets and deletes, in order; it need not
	// be atomic (replaying them again ends in the same state).
	Write(ops []Op) error
	// Mark returns the Mark last set, or the zero Mark.
	Mark() (Mark, error)
	// SetMark notes that everything before m is applied: after the
	// Write it follows, no sooner.
	SetMark(m Mark) error
}

// Options configure a Log.
type Options struct {
	// Sync makes every entry fdatasync'd before Append returns, and
	// new log files' names fsynced before they are used.
	Sync bool
	// WriteFailed, if set, is told of every error writing the log
	// file before Append returns it: the journal stops taking changes
	// when the filesystem refuses writes outright.
	WriteFailed func(error)
}

// Log is an open record log. Its methods are safe for concurrent use.
type Log struct {
	dir   string
	sync  bool
	store Store

	mu      sync.Mutex
	f       *os.File
	gen     uint64
	end     int64 // bytes in f
	pending []Op  // logged and not yet known to be in the store, oldest first
	lookup  map[string][]byte
	err     error // the log cannot be written any more (a cut entry could not be undone)
	failed  func(error)

	applyMu sync.Mutex // one batch at a time
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

// writeFailed wraps a write error of the log, and tells Options.WriteFailed.
func (l *Log) writeFailed(err error) error {
	err = fmt.Errorf("journal: record log: %w", err)
	if l.failed != nil {
		l.failed(err)
	}
	return err
}

func walName(gen uint64) string { return fmt.Sprintf("%s%016x", walPrefix, gen) }

// Open applies to s what the log files in dir hold beyond s's mark,
// and opens the newest for appending.
func Open(dir string, s Store, opts Options) (*Log, error) {
	l := &Log{dir: dir, sync: opts.Sync, store: s, failed: opts.WriteFailed, lookup: map[string][]byte{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	mark, err := s.Mark()
	if err != nil {
		return nil, err
	}
	markGen, markOff := mark.Gen, mark.Off
	gens, err := l.generations()
	if err != nil {
		return nil, err
	}
	last := max(markGen, 1)
	for _, gen := range gens {
		if gen < markGen {
			// Applied in full before a newer generation began.
			os.Remove(filepath.Join(dir, walName(gen)))
			continue
		}
		from := int64(0)
		if gen == markGen {
			from = markOff
		}
		if err := l.replay(gen, from); err != nil {
			return nil, err
		}
		last = gen
	}
	if err := l.openFile(last); err != nil {
		return nil, err
	}
	go l.applier()
	return l, nil
}

// generations lists the log files in dir, oldest first.
func (l *Log) generations() ([]uint64, error) {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("journal: record log: %w", err)
	}
	var gens []uint64
	for _, e := range ents {
		if name, ok := strings.CutPrefix(e.Name(), walPrefix); ok {
			if gen, err := strconv.ParseUint(name, 16, 64); err == nil {
				gens = append(gens, gen)
			}
		}
	}
	sort.Slice(gens, func(a, b int) bool { return gens[a] < gens[b] })
	return gens, nil
}

// replay applies the entries of generation gen from offset from on,
// and drops a cut entry at its end with what follows it.
func (l *Log) replay(gen uint64, from int64) error {
	p := filepath.Join(l.dir, walName(gen))
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("journal: record log: %w", err)
	}
	var ops []Op
	off := from
	for off < int64(len(b)) {
		entry, n, ok := decodeEntry(b[off:])
		if !ok {
			break
		}
		ops = append(ops, entry...)
		off += n
	}
	if off < int64(len(b)) {
		// A cut entry: its change never proceeded.
		if err := os.Truncate(p, off); err != nil {
			return fmt.Errorf("journal: record log: drop a cut entry: %w", err)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if err := l.store.Write(ops); err != nil {
		return err
	}
	return l.store.SetMark(Mark{gen, off})
}

// openLogFile opens a log file; tests make it fail.
var openLogFile = os.OpenFile

// openFile opens generation gen for appending, making it if needed,
// and logs to it from then on.
func (l *Log) openFile(gen uint64) error {
	f, size, err := l.create(gen)
	if err != nil {
		return err
	}
	l.f, l.gen, l.end = f, gen, size
	return nil
}

// create opens generation gen for appending, making it if needed, and
// returns it with its length.
func (l *Log) create(gen uint64) (*os.File, int64, error) {
	p := filepath.Join(l.dir, walName(gen))
	f, err := openLogFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("journal: record log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("journal: record log: %w", err)
	}
	if l.sync {
		// A new log must be found after a power cut before anything
		// in it counts.
		if err := syncDir(l.dir); err != nil {
			f.Close()
			return nil, 0, err
		}
	}
	return f, st.Size(), nil
}

// Append writes one entry, built by build under the log's lock — so
// that what build numbers (records' sequence numbers) is logged in
// order — and returns once it is in the page cache (fdatasync'd with
// Options.Sync). An entry with no operations is not written.
func (l *Log) Append(build func() ([]Op, error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	ops, err := build()
	if err != nil || len(ops) == 0 {
		return err
	}
	buf := encodeEntry(ops)
	if _, err := l.f.Write(buf); err != nil {
		// Undo what part of the entry was written, so the next one
		// starts where this one did; if that fails too, log no more.
		if terr := l.f.Truncate(l.end); terr != nil {
			l.err = fmt.Errorf("%w (%v)", ErrBroken, terr)
		}
		return l.writeFailed(err)
	}
	if l.sync {
		if err := unix.Fdatasync(int(l.f.Fd())); err != nil {
			return l.writeFailed(err)
		}
	}
	l.end += int64(len(buf))
	for _, op := range ops {
		if op.Lookup && !op.Delete {
			l.lookup[string(op.Key)] = op.Val
		}
	}
	l.pending = append(l.pending, ops...)
	if len(l.pending) >= ApplyOps {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Backlog is how many logged operations the store may not have yet.
func (l *Log) Backlog() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// Pending returns the value of a logged set of key marked Lookup that
// the store may not have yet. It lets go of it only once the store has
// it, so a reader that asks here, then the store, never misses it.
func (l *Log) Pending(key []byte) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.lookup[string(key)]
	return v, ok
}

// Apply writes what is pending to the store, then the mark that it is
// there. A fully applied log past walRotate is replaced.
func (l *Log) Apply() error {
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	l.mu.Lock()
	ops, gen, end := l.pending, l.gen, l.end
	l.mu.Unlock()
	if len(ops) > 0 {
		if err := l.store.Write(ops); err != nil {
			return err
		}
		if err := l.store.SetMark(Mark{gen, end}); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := l.pending[len(ops):]
	l.pending = append([]Op(nil), rest...)
	if len(l.pending) == 0 {
		clear(l.lookup)
	}
	if len(l.pending) == 0 && l.end > walRotate && l.err == nil {
		// What was asked is done: the entries are in the store. A log
		// that cannot be replaced just grows until a later apply
		// manages to, so that is no reason to fail a reader or a
		// write waiting on this apply.
		l.rotate()
	}
	return nil
}

// rotate replaces the log, fully applied, by the next generation. The
// caller holds mu: nothing is logged meanwhile.
//
// The order keeps every logged entry where the next start looks for
// it. That start deletes, unread, every generation below the one the
// mark names, and replays the rest from the mark on. So the new log
// exists before anything is written to it, and the mark names it only
// once it does:
//   - the new log cannot be made: nothing has changed; entries go on
//     into the old one, which the mark still names, and the next apply
//     tries again;
//   - a crash after it was made and before the mark: the old log is
//     replayed from the mark (nothing is left), then the new one;
//   - the mark cannot be written: the same, at the next start, unless a
//     later apply's mark names the new generation — then the old one is
//     deleted then, as it may be, being applied in full.
//
// Only once the mark names the new generation is the old file removed.
func (l *Log) rotate() error {
	next := l.gen + 1
	f, size, err := l.create(next)
	if err != nil {
		return err
	}
	old, oldGen := l.f, l.gen
	l.f, l.gen, l.end = f, next, size
	old.Close()
	if err := l.store.SetMark(Mark{next, 0}); err != nil {
		return err
	}
	os.Remove(filepath.Join(l.dir, walName(oldGen)))
	return nil
}

// applier applies the log in the background.
func (l *Log) applier() {
	defer close(l.stopped)
	t := time.NewTicker(applyEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.kick:
		case <-t.C:
			l.mu.Lock()
			idle := len(l.pending) == 0
			l.mu.Unlock()
			if idle {
				continue
			}
		}
		// An error here is the reader's to meet: the entries stay
		// pending and the next apply tries again.
		l.Apply()
	}
}

// stopApplier stops the background applier, if it still runs.
func (l *Log) stopApplier() {
	select {
	case <-l.stopped:
	default:
		close(l.stop)
		<-l.stopped
	}
}

// Close applies what is pending and closes the log.
func (l *Log) Close() error {
	l.stopApplier()
	err := l.Apply()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir fsyncs a directory, making the names in it durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("journal: sync %s: %w", dir, err)
	}
	return nil
}
