package rescan

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
)

// Observer is told of the paths a scan found changed, so the mount can
// drop what the kernel caches of them. It is called with the journal's
// gate held exclusively, so it must only queue (see rollback.Observer).
type Observer interface {
	Changed(path string, ino uint64, linked bool) // modified in place
	Replaced(path string)                         // another object, or none, is there now
}

// Stamper is an Observer that also knows when the mount last changed
// each inode since the last scan (fs.Mount.TakeStamps), in Unix
// nanoseconds after the change.
type Stamper interface {
	TakeStamps() map[uint64]int64
}

// Found is one change found outside the mount.
type Found struct {
	Path  string
	Cause journal.Cause // journal.CauseOutside*
}

// Scanner compares the backing directory with the fingerprints the
// journal keeps. It holds none of them itself: a scan reads them a
// batch at a time (journal.EachFingerprint), so its memory follows the
// records since the last scan, never the paths the window tracks.
type Scanner struct {
	j       *journal.Journal
	tree    *backing.Tree
	rootDev uint64
	log     *slog.Logger

	mu   sync.Mutex // one scan at a time
	upTo uint64     // records before it are accounted for in the fingerprints

	// w watches the directories that hold tracked paths (watch.go);
	// nil: every scan is a full one. watched: every such directory is
	// marked, since the last full scan marked them all, so a scan may
	// stat only what changed.
	w        *watcher
	watched  bool
	fullDirs int // directories the last full scan marked
	aside    func(ino uint64) uint32
	// window is where the window began at the last scan: a fingerprint
	// whose newest explaining record is older was due to be dropped by
	// then, and is dropped when next met.
	window uint64
	// full says why the last scan was a full one ("" if it was not).
	full string
}

// New returns a scanner of the fingerprints the journal keeps.
func New(j *journal.Journal, tree *backing.Tree, rootDev uint64, log *slog.Logger) (*Scanner, error) {
	upTo, err := j.ScannedUpTo()
	if err != nil {
		return nil, fmt.Errorf("rescan: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scanner{j: j, tree: tree, rootDev: rootDev, log: log, upTo: upTo}, nil
}

// Watch makes the scans after the next full one stat only what changed
// since the scan before (watch.go), where fanotify is available; each
// scan until then, and whenever hints may have been lost, is a full
// one. An error says why the scans stay full; Close ends watching.
func (s *Scanner) Watch() error {
	return s.watchAs(os.Getpid())
}

// watchAs is Watch, with the events caused by process self taken for
// the daemon's own.
func (s *Scanner) watchAs(self int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		return nil
	}
	w, err := newWatcher(self)
	if err != nil {
		return err
	}
	s.w, s.watched = w, false
	return nil
}

// Close stops watching.
func (s *Scanner) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unwatch()
}

// unwatch stops watching; the caller holds mu.
func (s *Scanner) unwatch() {
	if s.w != nil {
		s.w.close()
		s.w, s.watched = nil, false
	}
}

// CountAside tells the scanner how many names of an inode (its number
// on the backing filesystem) cowfs's aside area holds: names no tracked
// path is, which a scan that stats only what changed need not look for.
func (s *Scanner) CountAside(links func(ino uint64) uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aside = links
}

// asideLinks is the aside area's names of inode ino.
func (s *Scanner) asideLinks(ino uint64) uint32 {
	if s.aside == nil {
		return 0
	}
	return s.aside(ino)
}

// FullScan says why the last scan stat'ed every tracked path ("" if it
// stat'ed only what changed).
func (s *Scanner) FullScan() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.full
}

// Scan compares every tracked path with the backing directory and
// journals what changed outside the mount through g, which must be the
// journal's exclusive gate (labelled with the turn the changes belong
// to, or none). obs may be nil.
func (s *Scanner) Scan(g journal.Gate, obs Observer) ([]Found, error) {
	return s.scan(g, obs, false)
}

// scan is Scan; with explainedOnly, it checks only the tracked paths
// that the records since the last scan name (Refresh).
func (s *Scanner) scan(g journal.Gate, obs Observer, explainedOnly bool) ([]Found, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	upTo := s.j.NextSeq()
	ex, err := s.explained(s.upTo, upTo)
	if err != nil {
		return nil, err
	}
	if st, ok := obs.(Stamper); ok {
		ex.stamps = st.TakeStamps()
	}
	// A fingerprint whose newest explaining record is older than the
	// window's first turn names a path no record names any more.
	var windowStart uint64
	if ts, err := s.j.Turns(); err != nil {
		return nil, err
	} else if len(ts) > 0 {
		windowStart = ts[0].StartSeq
	}
	sc := &scan{s: s, g: g, obs: obs, ex: ex, windowStart: windowStart, set: map[string]journal.Fingerprint{},
		stat: s.tree.NewStater(), marked: map[string]bool{}}
	defer sc.stat.Close()
	if explainedOnly {
		// After a rollback's steps, which may have put new directories
		// where marked ones were: those are among what it checks.
		sc.marking = s.w != nil && s.watched
	} else if s.w != nil {
		changed, why := s.w.take()
		if why == "" && s.watched && s.w.watching() > 2*s.fullDirs+1024 {
			// Directories that no longer hold tracked paths stay
			// marked until a full scan marks anew.
			why = "the watched directories more than doubled since the last full scan"
		}
		if why == "" && s.watched {
			sc.marking = true
			if why, err = sc.changedOnly(changed); why == "" || err != nil {
				s.full = ""
				return s.scanned(sc, windowStart, err)
			}
		}
		if why == "" {
			why = "nothing was watching"
		} else if s.watched {
			s.log.Warn("rescan: stat'ing every tracked path", "why", why)
		}
		s.full = why
		if err := s.w.reset(); err != nil {
			s.stopWatching(err)
		}
		s.watched = false
		sc.marking, sc.marked = s.w != nil, map[string]bool{}
	} else {
		s.full = "not watching"
	}
	seen := map[string]bool{}
	err = s.j.EachFingerprint(func(p string, old journal.Fingerprint) error {
		if _, ok := ex.last[p]; ok {
			seen[p] = true
		}
		if explainedOnly && !ex.names(p, old) {
			return nil
		}
		return sc.check(p, old, true)
	})
	if err != nil {
		return sc.found, err
	}
	for p := range ex.last {
		if !seen[p] {
			if err := sc.check(p, journal.Fingerprint{}, false); err != nil {
				return sc.found, err
			}
		}
	}
	if sc.marking && s.w != nil {
		s.watched, s.fullDirs = true, s.w.watching()
	}
	return s.scanned(sc, windowStart, nil)
}

// scanned ends scan sc: what it found is stored, and the records up to
// now are accounted for (the outside records too).
func (s *Scanner) scanned(sc *scan, windowStart uint64, err error) ([]Found, error) {
	if err != nil {
		return sc.found, err
	}
	if err := s.j.SaveFingerprints(sc.set, sc.drop, s.j.NextSeq()); err != nil {
		return sc.found, err
	}
	s.upTo = s.j.NextSeq()
	s.window = windowStart
	s.log.Debug("rescan", "full", s.full, "found", len(sc.found))
	return sc.found, nil
}

// stopWatching ends watching for good after err (the filesystem has no
// file handles fanotify can report, the marks ran out): the scans are
// full ones from now on. The caller holds mu.
func (s *Scanner) stopWatching(err error) {
	s.log.Warn("rescan: not watching the backing directory; every scan stats every tracked path", "err", err)
	s.unwatch()
}

// scan is one Scan under way.
type scan struct {
	s           *Scanner
	g           journal.Gate
	obs         Observer
	ex          *explanation
	windowStart uint64
	set         map[string]journal.Fingerprint
	drop        []string
	found       []Found
	stat        *backing.Stater // the fingerprints come in path order: a directory at a time
	// marking: the scan marks each directory before it stats what is
	// in it (watch.go); marked holds those it marked.
	marking bool
	marked  map[string]bool
}

// check compares tracked path p (fingerprint old; had is false for a
// path records name for the first time) with what is there now.
func (sc *scan) check(p string, old journal.Fingerprint, had bool) error {
	cur, st, err := sc.look(p)
	_, err = sc.judge(p, old, had, cur, st, err)
	return err
}

// look fingerprints p; when the scan marks, after marking the
// directories above it, and it too if it is one (and looking again).
func (sc *scan) look(p string) (journal.Fingerprint, *unix.Stat_t, error) {
	if !sc.marking {
		return sc.s.fingerprint(sc.stat, p)
	}
	if p != "" {
		sc.markDir(parentOf(p))
	}
	cur, st, err := sc.s.fingerprint(sc.stat, p)
	if err == nil && cur.Type == syscall.S_IFDIR && !sc.marked[p] {
		sc.markDir(p)
		cur, st, err = sc.s.fingerprint(sc.stat, p)
	}
	return cur, st, err
}

// markDir marks directory d, and those above it first.
func (sc *scan) markDir(d string) {
	if sc.marked[d] || !sc.marking {
		return
	}
	if d != "" {
		sc.markDir(parentOf(d))
	}
	sc.marked[d] = true
	fd, err := sc.stat.Dir(d)
	if err != nil {
		return // nothing to watch: the events of the directory above tell when there is
	}
	if err := sc.s.w.mark(fd, d); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return
		}
		sc.s.stopWatching(err)
		sc.marking = false
	}
}

// judge compares tracked path p (fingerprint old; had is false for a
// path records name for the first time) with cur, what look found
// (err: it could not look), and reports whether it stored a
// fingerprint for p.
func (sc *scan) judge(p string, old journal.Fingerprint, had bool, cur journal.Fingerprint, st *unix.Stat_t, err error) (bool, error) {
	s, ex := sc.s, sc.ex
	if err != nil {
		// Not a conflict to guess about: the path cannot be checked (a
		// symlink on the way, an I/O error). Keep the old fingerprint;
		// the planner's checks still apply.
		s.log.Warn("rescan: cannot check a path", "path", p, "err", err)
		return false, nil
	}
	again := ex.changedAgain(cur)
	switch {
	case !again && (ex.explains(p, old, cur) || ex.stamped(old, cur)):
		cur.Last = max(old.Last, ex.last[p])
	case !again && (!had || same(old, cur)):
		cur = old
	default:
		rec := outsideRecord(p, old, cur, st)
		if again {
			// Through the mount, then again outside it.
			rec.Cause, rec.Type, rec.Ino = journal.CauseOutsideModified, cur.Type, cur.Ino
		}
		// A change found, not one about to be made: there is no action
		// to hold back, and nothing to withdraw.
		op := capture.Op{Journal: s.j, Gate: sc.g}
		if err := op.Record(rec, nil); err != nil {
			return false, fmt.Errorf("rescan: journal a change outside the mount to %s: %w", p, err)
		}
		sc.found = append(sc.found, Found{Path: p, Cause: rec.Cause})
		s.log.Warn("changed outside the mount", "path", p, "how", causeName[rec.Cause], "turn", sc.g.Turn)
		if sc.obs != nil {
			if rec.Cause == journal.CauseOutsideModified {
				sc.obs.Changed(p, cur.Ino, st != nil && st.Nlink > 1 && cur.Type != syscall.S_IFDIR)
			} else {
				sc.obs.Replaced(p)
			}
		}
		cur.Last = rec.Seq
	}
	stored := false
	switch {
	case !had && cur == (journal.Fingerprint{}):
		// Untracked and unchanged: nothing to keep.
	case had && cur.Last < sc.windowStart:
		sc.drop = append(sc.drop, p) // no record in the window names it
	case cur != old || !had:
		sc.set[p], stored = cur, true
	}
	if len(sc.set)+len(sc.drop) >= saveBatch {
		// Mid-scan, without the note that records are accounted for:
		// a crash leaves fingerprints newer than the note, which the
		// next scan takes as explained again (SaveFingerprints).
		if err := s.j.SaveFingerprints(sc.set, sc.drop, 0); err != nil {
			return stored, err
		}
		clear(sc.set)
		sc.drop = sc.drop[:0]
	}
	return stored, nil
}

// saveBatch is how many new fingerprints a scan holds before it stores
// them.
const saveBatch = 4096

var causeName = map[journal.Cause]string{
	journal.CauseOutsideModified: "modified",
	journal.CauseOutsideDeleted:  "deleted",
	journal.CauseOutsideCreated:  "created",
	journal.CauseOutsideReplaced: "replaced",
}

// fingerprint stats p with stat; a missing path has Type 0. st is nil
// then.
func (s *Scanner) fingerprint(stat *backing.Stater, p string) (journal.Fingerprint, *unix.Stat_t, error) {
	st, err := stat.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return journal.Fingerprint{}, nil, nil
	}
	if err != nil {
		return journal.Fingerprint{}, nil, err
	}
	return journal.Fingerprint{Type: st.Mode & syscall.S_IFMT, Mode: st.Mode &^ syscall.S_IFMT, Nlink: uint32(st.Nlink),
		Ino:  journal.InodeID(st.Dev, st.Ino, s.rootDev),
		Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, st, nil
}

// same compares what a scan sees, not when a record last explained it.
// A file whose link count alone changed (another name of it made or
// removed — also by cowfs freeing an inode kept aside) holds the same:
// its ctime moved, nothing a rollback restores did.
func same(a, b journal.Fingerprint) bool {
	a.Last, b.Last = 0, 0
	if a.Nlink != b.Nlink {
		a.Nlink, a.Ctime = b.Nlink, b.Ctime
	}
	return a == b
}

// outsideRecord describes how p changed from old to cur (stat st).
func outsideRecord(p string, old, cur journal.Fingerprint, st *unix.Stat_t) *journal.Record {
	rec := &journal.Record{Kind: journal.KindOutside, Path: p, Type: cur.Type, Ino: cur.Ino}
	switch {
	case cur.Type == 0:
		rec.Cause, rec.Type, rec.Ino = journal.CauseOutsideDeleted, old.Type, old.Ino
	case old.Type == 0:
		rec.Cause = journal.CauseOutsideCreated
	case old.Type != cur.Type || old.Ino != cur.Ino:
		rec.Cause = journal.CauseOutsideReplaced
	default:
		rec.Cause = journal.CauseOutsideModified
	}
	if st != nil {
		rec.Attr = journal.AttrOf(st)
	}
	return rec
}

// explanation is what the records since the last scan account for.
type explanation struct {
	last  map[string]uint64 // path -> newest record naming it (or an entry in it)
	trees map[string]bool   // directories renamed or removed: paths beneath moved with them
	inos  map[uint64]bool   // identities changed
	// stamps: when the mount last changed an inode (see Stamper).
	stamps map[uint64]int64
}

// changedAgain reports whether the file at cur was written after the
// mount last changed it: its mtime and ctime are later than the mount's
// stamp (ctime too: the mount may set any mtime, touch -d). (The
// kernel's coarse clock may set an mtime a few milliseconds behind, so a
// write outside the mount right after one through it can go unseen;
// mtime, not ctime, so that renames, links and cowfs freeing an aside
// entry — which move only ctime — are not taken for writes. A change of
// metadata alone outside the mount, to a file the mount changed since
// the last scan, is not seen either.)
func (ex *explanation) changedAgain(cur journal.Fingerprint) bool {
	t, ok := ex.stamps[cur.Ino]
	// A write sets mtime to the present; one in the future was set
	// explicitly (touch -d), by the mount.
	return ok && cur.Type == syscall.S_IFREG && cur.Mtime > t && cur.Ctime > t && cur.Mtime <= time.Now().UnixNano()
}

// stamped reports whether the mount changed the inode at a path in
// place since the last scan, and nothing did after it: the same inode
// is there, and its ctime is not later than the mount's stamp. The
// mount journals a pre-image once per inode and epoch, so a change
// through it may leave no record after a scan made in the middle of an
// epoch (a rollback's, or its dry run's, before it plans); the stamp
// explains it.
func (ex *explanation) stamped(old, cur journal.Fingerprint) bool {
	t, ok := ex.stamps[cur.Ino]
	return ok && old.Type != 0 && cur.Type == old.Type && cur.Ino == old.Ino && cur.Ctime <= t
}

func (s *Scanner) explained(from, to uint64) (*explanation, error) {
	ex := &explanation{last: map[string]uint64{}, trees: map[string]bool{}, inos: map[uint64]bool{}}
	err := s.j.Scan(from, to, false, func(r *journal.Record) error {
		if r.Kind == journal.KindEvent {
			return nil
		}
		for _, p := range []string{r.Path, r.Path2} {
			if p == "" && r.Kind != journal.KindAttr {
				continue
			}
			if aside.Private(p) {
				continue
			}
			ex.last[p] = r.Seq
			if dir := parentOf(p); dir != p && !aside.Private(dir) {
				ex.last[dir] = r.Seq // its entries changed: its times did
			}
			if r.Kind == journal.KindRename || r.Kind == journal.KindRemove {
				ex.trees[p] = true
			}
		}
		ex.inos[r.Ino] = true
		if r.Ino2 != 0 {
			ex.inos[r.Ino2] = true
		}
		return nil
	})
	delete(ex.inos, 0)
	return ex, err
}

// explains reports whether the records account for p going from old to
// cur.
func (ex *explanation) explains(p string, old, cur journal.Fingerprint) bool {
	if _, ok := ex.last[p]; ok {
		return true
	}
	if (old.Type != 0 && ex.inos[old.Ino]) || (cur.Type != 0 && ex.inos[cur.Ino]) {
		return true
	}
	for d := parentOf(p); d != ""; d = parentOf(d) {
		if ex.trees[d] {
			return true
		}
	}
	return false
}

// names reports whether the records name tracked path p (fingerprint
// old): the path, the inode it held, or a directory above it renamed or
// removed. What they name is what explains may take as explained.
func (ex *explanation) names(p string, old journal.Fingerprint) bool {
	return ex.explains(p, old, journal.Fingerprint{})
}

// parentOf is p's directory ("" for the root and what is in it).
func parentOf(p string) string {
	d := path.Dir(p)
	if d == "." || d == "/" {
		return ""
	}
	return d
}
