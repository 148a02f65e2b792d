package journal

import (
	"fmt"
	"log/slog"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// DefaultWindow is how many turns a journal keeps unless told otherwise.
const DefaultWindow = 10

// DefaultMaxSize is the size bound of a journal unless told otherwise.
const DefaultMaxSize = 8 << 30

// Options configure a journal.
type Options struct {
	// Window is how many of the latest turns are kept; older ones are
	// pruned. Zero means DefaultWindow.
	Window int

	// Sync makes every commit durable on disk (fsync) before Append
	// returns, not only in the kernel's page cache.
	Sync bool

	// MaxSize bounds the bytes the journal takes on disk: when a record
	// would not fit, the oldest turns leave the window early (space.go).
	// Zero means DefaultMaxSize; negative, no bound but free space.
	MaxSize int64

	// Reserve is the free space, in bytes, the journal's filesystem
	// must keep after a record is stored: Badger writes through memory
	// mappings, and a write to a mapping on a full filesystem kills the
	// process (SIGBUS) instead of returning an error. Zero means what
	// Badger may write before the next check (space.go).
	Reserve int64

	// Logger receives Badger's warnings and the journal's own notes.
	// Nil means silent.
	Logger *slog.Logger
}

func (o Options) maxSize() int64 {
	switch {
	case o.MaxSize == 0:
		return DefaultMaxSize
	case o.MaxSize < 0:
		return 0
	}
	return o.MaxSize
}

// memTableSize is the size of Badger's memtables.
const memTableSize = 2 << 20

func (o Options) window() int {
	if o.Window <= 0 {
		return DefaultWindow
	}
	return o.Window
}

// badgerOptions tunes Badger for a small embedded journal. The
// defaults are sized for a database server: 64 MiB memtables, five of
// them, a 256 MiB block cache, 1 GiB value-log files — about 84 MB
// resident at open. Content lives in pack files (package pack); Badger holds
// records, turns and the chunk index, a few hundred bytes a change, so:
//
//   - memtables of 2 MiB, two of them (a transaction may be up to 15% of
//     a memtable: records reach Badger in write batches, which split
//     themselves), and tables of 512 KiB at every level. What Badger
//     holds in memory beyond its memtables is table builders — each
//     holds the table it builds — which it keeps pooled after use, eight
//     at most, and compactions run up to thirteen at once, so the
//     builders' memory follows the table size: larger memtables and
//     tables growing per level held several times as much through a
//     large turn and its rollback, and these cost appends nothing
//     (BenchmarkAppend*; docs/performance.md has the figures);
//   - values up to 64 KiB stay in the LSM tree, whose compactions drop
//     deleted keys and give their space back. Badger's value log does
//     not: it reclaims a file only when compactions have reported its
//     values discarded, and never the file it is writing, so with a
//     window of 10 it grew with every turn. Only
//     a record of a pre-image over ~600 MiB or a part of a rollback's
//     plan reaches it, in files of 16 MiB so garbage collection can
//     take them in small steps;
//   - no compression of the LSM tree's blocks, and so no block cache
//     (Badger reads blocks from its mapped tables). Snappy saved disk
//     (records repeat paths and command names), but each table builder
//     then held the compressed copy of every block beside the block,
//     more than doubling the builders' memory in a large rollback. The
//     daemon's memory is bounded; a few
//     MiB of disk per 10,000 changes is not what the journal's size is
//     made of (content is).
func badgerOptions(dir string, o Options) badger.Options {
	b := badger.DefaultOptions(dir).
		WithLogger(badgerLogger{o.Logger}).
		WithSyncWrites(o.Sync).
		WithMetricsEnabled(false).
		WithDetectConflicts(false).
		WithNumVersionsToKeep(1).
		WithMemTableSize(memTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithBaseTableSize(512 << 10).
		WithBaseLevelSize(8 << 20).
		WithNumCompactors(2).
		WithValueThreshold(64 << 10).
		WithValueLogFileSize(16 << 20).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithCompression(options.None).
		WithNumGoroutines(2)
	b.TableSizeMultiplier = 1
	return b
}

// badgerLogger passes Badger's warnings and errors to slog and drops
// its chatty info and debug lines.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	if b.l != nil {
		b.l.Error("badger: " + fmt.Sprintf(f, a...))
	}
}

func (b badgerLogger) Warningf(f string, a ...any) {
	if b.l != nil {
		b.l.Warn("badger: " + fmt.Sprintf(f, a...))
	}
}

func (b badgerLogger) Infof(string, ...any)  {}
func (b badgerLogger) Debugf(string, ...any) {}
