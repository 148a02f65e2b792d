package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

// The record log: how a record becomes durable before the change it
// records proceeds, without a Badger transaction on the way.
//
// A Badger commit hands the transaction to Badger's writer goroutine
// and waits for it, and its oracle's watermarks, to come back: four
// goroutine wake-ups per record, and with one FUSE reader serving
// requests inline, every record waited for them. So Append writes its
// record — the record, its chunk references, the index entries of
// chunks it stored — as one entry with write(2) to the log file
// "log.NNNNNNNNNNNNNNNN" beside Badger, and returns: the entry is in
// the kernel's page cache and survives a kill -9 of the daemon, as a
// Badger commit did (with Options.Sync it is fdatasync'd first, as
// Badger's commit was). Invariant 1 holds as before: the change
// proceeds only once its record is that durable.
//
// The log's entries reach Badger in batches — many records per
// transaction — from a goroutine of their own, woken when enough are
// pending and every walApplyEvery; and before anything reads Badger or
// writes it directly (store), so Badger is never behind a record when
// it is read. After each batch Badger's key 'L' notes how far the log
// is applied (generation and offset, written after the batch). At open,
// whatever follows that note is applied again before anything else:
// every entry is a list of blind sets and deletes, so applying a suffix
// of the log again over a Badger that already has part of it ends in
// the same state — provided nothing else wrote those keys in between,
// which no one does: every direct write applies the log first, and the
// note, before it writes. An entry cut short by a crash (a kill -9 in
// the middle of write(2), or power lost without Sync) fails its
// checksum: it and what follows are dropped, and the change it was for
// never happened. A log past walRotate, fully applied, is replaced by
// a new generation, made before the note names it (rotate says why
// that order loses nothing).

const (
	walPrefix     = "log."
	walRotate     = 8 << 20               // bytes of log after which a fully applied log is replaced
	walApplyOps   = 2048                  // pending operations that wake the applier
	walApplyEvery = 50 * time.Millisecond // and it wakes this often anyway, if any are pending
	walHeader     = 8                     // length and CRC-32C of an entry
	walMaxEntry   = 1 << 30               // sanity bound when reading
	walOpSet      = 0
	walOpDelete   = 1
)

var (
	walMarkKey = []byte{prefixLogMark}
	crcTable   = crc32.MakeTable(crc32.Castagnoli)
)

// walOp is one blind write of an entry.
type walOp struct {
	del      bool
	key, val []byte
}

// recordLog is the log of one open journal.
type recordLog struct {
	dir  string
	sync bool
	db   *badger.DB // raw: the log's own writes never wait for the log

	mu      sync.Mutex
	f       *os.File
	gen     uint64
	end     int64   // bytes in f
	pending []walOp // logged and not yet known to be in Badger, oldest first
	chunks  map[[32]byte][]byte
	err     error // the log cannot be written any more (a cut entry could not be undone)
	// refused is told of a write the filesystem refused outright
	// (health.go: refusal); the journal is unusable from then on.
	refused func(error)

	applyMu sync.Mutex // one batch at a time
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

// failed wraps a write error of the log, and tells refused of one that
// says the filesystem takes no more writes.
func (l *recordLog) failed(err error) error {
	err = fmt.Errorf("journal: record log: %w", err)
	if refusal(err) {
		l.refused(err)
	}
	return err
}

func walName(gen uint64) string { return fmt.Sprintf("%s%016x", walPrefix, gen) }

// openRecordLog applies what the logs in dir hold beyond Badger's note
// and opens the newest for appending.
func openRecordLog(dir string, db *badger.DB, sync bool, refused func(error)) (*recordLog, error) {
	l := &recordLog{dir: dir, sync: sync, db: db, refused: refused, chunks: map[[32]byte][]byte{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	markGen, markOff, err := l.mark()
	if err != nil {
		return nil, err
	}
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

// mark returns Badger's note of how far the log is applied.
func (l *recordLog) mark() (gen uint64, off int64, err error) {
	err = l.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(walMarkKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 16 {
				return fmt.Errorf("%w: log mark of %d bytes", ErrCorrupt, len(v))
			}
			gen, off = binary.BigEndian.Uint64(v), int64(binary.BigEndian.Uint64(v[8:]))
			return nil
		})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("journal: record log: %w", err)
	}
	return gen, off, nil
}

// generations lists the log files in dir, oldest first.
func (l *recordLog) generations() ([]uint64, error) {
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
func (l *recordLog) replay(gen uint64, from int64) error {
	p := filepath.Join(l.dir, walName(gen))
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("journal: record log: %w", err)
	}
	var ops []walOp
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
	if err := l.write(ops); err != nil {
		return err
	}
	return l.setMark(gen, off)
}

// openLogFile opens a log file; tests make it fail.
var openLogFile = os.OpenFile

// openFile opens generation gen for appending, making it if needed,
// and logs to it from then on.
func (l *recordLog) openFile(gen uint64) error {
	f, size, err := l.create(gen)
	if err != nil {
		return err
	}
	l.f, l.gen, l.end = f, gen, size
	return nil
}

// create opens generation gen for appending, making it if needed, and
// returns it with its length.
func (l *recordLog) create(gen uint64) (*os.File, int64, error) {
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

// log writes one entry, built by build under the log's lock — so that
// what build numbers (records' sequence numbers) is logged in order —
// and returns once it is in the page cache (fdatasync'd with sync).
func (l *recordLog) log(build func() ([]walOp, error)) error {
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
			l.err = fmt.Errorf("%w: the record log holds a cut entry (%v)", ErrUnusable, terr)
		}
		return l.failed(err)
	}
	if l.sync {
		if err := unix.Fdatasync(int(l.f.Fd())); err != nil {
			return l.failed(err)
		}
	}
	l.end += int64(len(buf))
	for _, op := range ops {
		if !op.del && len(op.key) == 33 && op.key[0] == prefixChunk {
			l.chunks[[32]byte(op.key[1:])] = op.val
		}
	}
	l.pending = append(l.pending, ops...)
	if len(l.pending) >= walApplyOps {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// backlog is how many logged operations Badger does not have yet.
func (l *recordLog) backlog() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// chunk returns the index entry of chunk h that a logged record holds
// and Badger may not have yet.
func (l *recordLog) chunk(h [32]byte) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.chunks[h]
	return v, ok
}

// apply writes what is pending to Badger, then the note that it is
// there. A fully applied log past walRotate is replaced.
func (l *recordLog) apply() error {
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	l.mu.Lock()
	ops, gen, end := l.pending, l.gen, l.end
	l.mu.Unlock()
	if len(ops) > 0 {
		if err := l.write(ops); err != nil {
			return err
		}
		if err := l.setMark(gen, end); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := l.pending[len(ops):]
	l.pending = append([]walOp(nil), rest...)
	if len(l.pending) == 0 {
		clear(l.chunks)
	}
	if len(l.pending) == 0 && l.end > walRotate && l.err == nil {
		// What was asked is done: the entries are in Badger. A log
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
// note names, and replays the rest from the note on. So the new log
// exists before anything is written to it, and the note names it only
// once it does:
//   - the new log cannot be made: nothing has changed; entries go on
//     into the old one, which the note still names, and the next apply
//     tries again;
//   - a crash after it was made and before the note: the old log is
//     replayed from the note (nothing is left), then the new one;
//   - the note cannot be written: the same, at the next start, unless a
//     later apply's note names the new generation — then the old one is
//     deleted then, as it may be, being applied in full.
//
// Only once the note names the new generation is the old file removed.
func (l *recordLog) rotate() error {
	next := l.gen + 1
	f, size, err := l.create(next)
	if err != nil {
		return err
	}
	old, oldGen := l.f, l.gen
	l.f, l.gen, l.end = f, next, size
	old.Close()
	if err := l.setMark(next, 0); err != nil {
		return err
	}
	os.Remove(filepath.Join(l.dir, walName(oldGen)))
	return nil
}

// write applies ops to Badger, in order, in as many transactions as it
// takes.
func (l *recordLog) write(ops []walOp) error {
	wb := l.db.NewWriteBatch()
	defer wb.Cancel()
	for _, op := range ops {
		var err error
		if op.del {
			err = wb.Delete(op.key)
		} else {
			err = wb.Set(op.key, op.val)
		}
		if err != nil {
			return fmt.Errorf("journal: apply the record log: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		if errors.Is(err, badger.ErrDBClosed) {
			return ErrClosed
		}
		return fmt.Errorf("journal: apply the record log: %w", err)
	}
	return nil
}

func (l *recordLog) setMark(gen uint64, off int64) error {
	v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, gen), uint64(off))
	if err := l.db.Update(func(txn *badger.Txn) error { return txn.Set(walMarkKey, v) }); err != nil {
		if errors.Is(err, badger.ErrDBClosed) {
			return ErrClosed
		}
		return fmt.Errorf("journal: note the record log applied: %w", err)
	}
	return nil
}

// applier applies the log in the background.
func (l *recordLog) applier() {
	defer close(l.stopped)
	t := time.NewTicker(walApplyEvery)
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
		l.apply()
	}
}

// close applies what is pending and closes the log.
func (l *recordLog) close() error {
	close(l.stop)
	<-l.stopped
	err := l.apply()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
