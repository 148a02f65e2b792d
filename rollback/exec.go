package rollback

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/capture"
	"github.com/cowfs/cowfs/journal"
)

// executor performs a plan's steps on the backing directory, in order.
// Each step first checks that the backing directory holds what the plan
// expects: if the step's result is already there (a run interrupted by
// a crash), it does nothing; if something else is there, it skips and
// says why. It never guesses. Every change is journaled first through
// the undo log (unless this is an unrevert).
type executor struct {
	env   *Env
	log   *undoLog // nil for an unrevert
	names string   // prefix of aside names this run gives: "rb7-"

	records records // what the steps undo, read ahead

	skipped []uint64          // steps skipped for a conflict found at run time
	reasons map[string]string // path -> why it was skipped
	why     map[uint64]string // record -> why its step was skipped

	// progress, if set, stores that the steps before next are done,
	// after each step (see saveProgress).
	progress func(next int) error

	// retrying: this run goes on with a rollback or unrevert that
	// stopped at a failed step. A step that fails for a reason of its
	// own path is then skipped and reported, not stopped at (do), so
	// that one path that cannot be restored never holds the rest
	// hostage. Failures to journal still stop the run.
	retrying bool
	// failed are the inodes whose step a retry skipped for failure:
	// their older steps do not run either, so each ends in a state it
	// had (its newer changes undone, the rest left), never a mix.
	failed map[uint64]bool
}

// skipError is a step that must not or cannot run; the reason is
// reported for its path, the detail logged.
type skipError struct{ reason, detail string }

func (e skipError) Error() string {
	if e.detail != "" {
		return e.reason + " (" + e.detail + ")"
	}
	return e.reason
}

// run performs plan's steps from index from on, in order. A step that
// finds the workspace other than the plan expects is skipped and its
// reason noted (a conflict: it stays in effect, reported per path). A
// step that fails for any other reason — no space for its undo record,
// an I/O error — stops the run: the steps after it may depend on it, and
// running them would report conflicts that are only its consequence.
// run returns the index of the failed step and its error, or -1 and nil.
func (x *executor) run(plan *Plan, from int) (int, error) {
	x.reasons, x.why = map[string]string{}, map[uint64]string{}
	n, failed := plan.numSteps(), from
	err := plan.eachStep(from, func(i int, s *Step) error {
		failed = i
		if err := x.do(s); err != nil {
			return err
		}
		// A step the plan skips does nothing: running it again after a
		// crash is harmless, so its progress need not be stored.
		if x.progress != nil && (s.Skip == "" && s.Op != "" || i == n-1) {
			if err := x.progress(i + 1); err != nil {
				return err // done; a retry finds it done
			}
		}
		if h := x.env.AfterStep; h != nil {
			h(i + 1)
		}
		return nil
	})
	if err != nil {
		return failed, err
	}
	return -1, nil
}

// do runs step s unless the plan skips it. A conflict is noted, and do
// returns nil; any other error is returned.
func (x *executor) do(s *Step) error {
	if s.Skip != "" || s.Op == "" {
		return nil
	}
	var err error
	if x.failed[s.Ino] || x.failed[s.Ino2] {
		err = skipError{reason: reasonFailedBefore}
	} else {
		err = x.step(s)
		x.log.stepDone()
	}
	if err == nil {
		return nil
	}
	if x.env.Log != nil {
		x.env.Log.Warn("rollback step failed", "seq", s.Seq, "op", s.Op, "path", s.Path, "path2", s.Path2,
			"ino", s.Ino, "ino2", s.Ino2, "why", err)
	}
	p := stepPath(s)
	var pe *os.PathError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Path, "/proc/self/fd/") {
		pe.Path = p // the descriptor the step acted through: name what it holds
	}
	if !strings.Contains(err.Error(), p) {
		err = fmt.Errorf("%s: %w", p, err)
	}
	var se skipError
	// A failure to journal the step's undo (no space, the journal
	// unusable) is no fault of the step's path: never skipped.
	var je *capture.AppendError
	switch {
	case errors.As(err, &se):
	case x.retrying && !errors.As(err, &je):
		se = skipError{reason: reasonFailed + err.Error()}
		if x.failed == nil {
			x.failed = map[uint64]bool{}
		}
		for _, id := range []uint64{s.Ino, s.Ino2} {
			if id != 0 {
				x.failed[id] = true
			}
		}
	default:
		return err
	}
	x.skipped = append(x.skipped, s.Seq)
	for _, p := range []string{s.Path, s.Path2} {
		if p != "" && !aside.Private(p) && x.reasons[p] == "" {
			x.reasons[p] = se.reason
		}
	}
	if x.why[s.Seq] = x.reasons[stepPath(s)]; x.why[s.Seq] == "" {
		x.why[s.Seq] = reasonMismatch
	}
	return nil
}

// stepPath is the workspace path a step is about, for messages.
func stepPath(s *Step) string {
	if s.Path2 != "" && aside.Private(s.Path) {
		return s.Path2
	}
	return s.Path
}

func (x *executor) step(s *Step) error {
	switch s.Op {
	case opRemove:
		if len(s.Covers) > 0 {
			return x.removeTree(s)
		}
		return x.remove(s)
	case opRecover:
		return x.recover(s)
	case opRename:
		return x.renameBack(s)
	case opExchange:
		return x.exchange(s)
	case opAttr:
		return x.attr(s)
	case opData:
		return x.data(s)
	case opXattr:
		return x.xattr(s)
	}
	return fmt.Errorf("rollback: unknown step %q", s.Op)
}

// identity returns the identity of the inode with stat st.
func (x *executor) identity(st *unix.Stat_t) uint64 {
	return journal.InodeID(st.Dev, st.Ino, x.env.RootDev)
}

// record reads the whole record a step undoes (records.go).
func (x *executor) record(seq uint64) (*journal.Record, error) {
	return x.records.get(x.env.Journal, seq)
}

// inPlace returns the record an in-place step undoes and the inode it
// changes, opened at the step's path and checked (object.go); the
// caller closes it.
func (x *executor) inPlace(s *Step) (*journal.Record, *object, error) {
	r, err := x.record(s.Seq)
	if err != nil {
		return nil, nil, err
	}
	o, err := x.openHeld(s.Path, s.Ino)
	if err == nil && r.Type != 0 && o.typ() != r.Type {
		// The same inode number, another type: the inode the record
		// names was freed behind the mount and its number given out
		// again. Not the record's to change.
		o.close()
		return nil, nil, skipError{reasonMismatch, fmt.Sprintf("%s is of type %o, not %o", s.Path, o.typ(), r.Type)}
	}
	return r, o, err
}

// attr puts attributes back: size (the bytes cut off are journaled
// first), owner, mode and times.
func (x *executor) attr(s *Step) error {
	r, o, err := x.inPlace(s)
	if err != nil {
		return err
	}
	defer o.close()
	resized := o.typ() == syscall.S_IFREG && r.Attr.Size != o.st.Size
	cause := journal.CauseMode
	if s.Dir {
		cause = journal.CauseDirent
	}
	if err := x.log.attr(s.Path, s.Ino, o.st, cause); err != nil {
		return err
	}
	if resized {
		f, err := o.file(s.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := x.log.data(s.Path, s.Ino, f, r.Attr.Size, o.st.Size); err != nil {
			return err
		}
		if err := f.Truncate(r.Attr.Size); err != nil {
			return err
		}
	}
	if err := setAttr(o, r.Attr); err != nil {
		return err
	}
	if resized {
		x.rewritten(s.Path, s.Ino, o.st)
	} else {
		x.changed(s.Path, s.Ino, o.st)
	}
	return nil
}

// setAttr puts back the owner, mode and times of o (a symlink keeps its
// mode: Linux has none to set). Owner goes first: chown clears set-id
// bits that the mode then restores.
func setAttr(o *object, a journal.Attr) error {
	if err := backing.Chown(o.fd, int(a.Uid), int(a.Gid)); err != nil {
		return err
	}
	if o.typ() != syscall.S_IFLNK {
		if err := backing.Chmod(o.fd, a.Mode); err != nil {
			return err
		}
	}
	return backing.Utimens(o.fd, unix.NsecToTimespec(a.Atime), unix.NsecToTimespec(a.Mtime))
}

// data puts overwritten bytes back; the bytes it overwrites in turn are
// journaled first.
func (x *executor) data(s *Step) error {
	r, o, err := x.inPlace(s)
	if err != nil {
		return err
	}
	defer o.close()
	f, err := o.file(s.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := x.log.attr(s.Path, s.Ino, o.st, journal.CauseWrite); err != nil {
		return err
	}
	if err := x.log.data(s.Path, s.Ino, f, r.Off, r.Off+r.Len); err != nil {
		return err
	}
	if err := writeBack(x.env.Journal, r, f, x.env.Log); err != nil {
		return err
	}
	x.rewritten(s.Path, s.Ino, o.st)
	return nil
}

// xattr puts an extended attribute's old value back, or removes it.
func (x *executor) xattr(s *Step) error {
	r, o, err := x.inPlace(s)
	if err != nil {
		return err
	}
	defer o.close()
	if err := x.log.xattr(s.Path, o, r.XattrName); err != nil {
		return err
	}
	if err := backing.PutXattr(o.fd, r.XattrName, r.XattrValue, r.XattrExisted); err != nil {
		return err
	}
	x.changed(s.Path, s.Ino, o.st)
	return nil
}

func (x *executor) changed(p string, ino uint64, st *unix.Stat_t) {
	if o := x.env.Observer; o != nil {
		o.Changed(p, ino, st.Nlink > 1 && st.Mode&syscall.S_IFMT != syscall.S_IFDIR)
	}
}

// rewritten tells the observer that p's bytes or size changed.
func (x *executor) rewritten(p string, ino uint64, st *unix.Stat_t) {
	if o := x.env.Observer; o != nil {
		o.Rewritten(p, ino, st.Nlink > 1)
	}
}
