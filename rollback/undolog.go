package rollback

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
)

// undoLog journals what a rollback is about to destroy, exactly as the
// mount journals an agent's changes (package capture: same record
// kinds, same rule — the record first — and each pre-image once in the
// run), tagged with the rollback's group. Undoing those records is
// unrevert. A nil undoLog journals nothing: an unrevert is not itself
// undone.
type undoLog struct {
	// op appends under the rollback's gate. It holds one step's records
	// at a time (stepDone), for the step to withdraw (discard).
	op    capture.Op
	seen  capture.Set // what the run has journaled, per identity
	group uint64
	root  uint64 // root device
}

func newUndoLog(j *journal.Journal, g journal.Gate, group, root uint64) *undoLog {
	u := &undoLog{group: group, root: root}
	u.op = capture.Op{Journal: j, Gate: g, By: u}
	return u
}

// Label tags each record with the rollback's group (capture.Author).
func (u *undoLog) Label(rec *journal.Record) { rec.Group = u.group }

// add journals rec, which is no pre-image (a move).
func (u *undoLog) add(rec *journal.Record, src io.ReaderAt) error {
	if u == nil {
		return nil
	}
	return u.op.Record(rec, src)
}

// attr journals the attributes (stat st) of id at p before the
// rollback's first change to it.
func (u *undoLog) attr(p string, id uint64, st *unix.Stat_t, cause journal.Cause) error {
	if u == nil {
		return nil
	}
	s := u.op.Take(&u.seen, id)
	defer s.Unlock()
	return u.op.Attr(s, id, p, st, cause)
}

// dirent journals the attributes of the directory of slot sl before
// the rollback changes its entries, so unrevert puts its times back. It
// stats the directory through the descriptor the step acts in.
func (u *undoLog) dirent(sl *slot) error {
	if u == nil || sl.area != "" {
		return nil
	}
	st, err := backing.Fstat(sl.dir)
	if err != nil {
		return err
	}
	return u.attr(sl.dirPath, journal.InodeID(st.Dev, st.Ino, u.root), st, journal.CauseDirent)
}

// discard withdraws rec, appended for a step that then did nothing.
func (u *undoLog) discard(rec *journal.Record) error {
	if u == nil {
		return nil
	}
	return u.op.Discard(rec)
}

// stepDone lets the records of the step just run stand, whatever it
// did.
func (u *undoLog) stepDone() {
	if u != nil {
		u.op.Keep()
	}
}

// data journals bytes [lo, hi) of id at p, read from f, as far as the
// file had them when the rollback first journaled its attributes (attr
// must have run) and the run has not journaled them yet.
func (u *undoLog) data(p string, id uint64, f *os.File, lo, hi int64) error {
	if u == nil {
		return nil
	}
	s := u.op.Take(&u.seen, id)
	defer s.Unlock()
	return u.op.Data(s, id, p, capture.Opened(f), lo, hi)
}

// xattr journals the current value of xattr name of o (at p).
func (u *undoLog) xattr(p string, o *object, name string) error {
	if u == nil {
		return nil
	}
	s := u.op.Take(&u.seen, o.id)
	defer s.Unlock()
	return u.op.Xattr(s, o.id, p, o.typ(), name, func() ([]byte, bool, error) {
		return backing.Getxattr(o.fd, name)
	})
}
