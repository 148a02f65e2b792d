package rollback

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
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
	err := x.step(s)
	if err == nil {
		return nil
	}
	if x.env.Log != nil {
		x.env.Log.Warn("rollback step failed", "seq", s.Seq, "op", s.Op, "path", s.Path, "path2", s.Path2,
			"ino", s.Ino, "ino2", s.Ino2, "why", err)
	}
	var se skipError
	if !errors.As(err, &se) {
		if p := stepPath(s); !strings.Contains(err.Error(), p) {
			err = fmt.Errorf("%s: %w", p, err)
		}
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

// stat returns what is at p today and its identity; ok is false if
// nothing is.
func (x *executor) stat(p string) (*unix.Stat_t, uint64, bool, error) {
	st, err := x.env.Tree.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	return st, x.identity(st), true, nil
}

// holds checks that p holds identity id.
func (x *executor) holds(p string, id uint64) (*unix.Stat_t, error) {
	st, got, ok, err := x.stat(p)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, skipError{reasonMismatch, fmt.Sprintf("%s is missing", p)}
	}
	if got != id {
		return nil, skipError{reasonMismatch, fmt.Sprintf("%s is inode %d, not %d", p, got, id)}
	}
	return st, nil
}

// rename renames from to to and tells the observer. A move into or out
// of the aside area goes through the area, which keeps its link counts.
func (x *executor) rename(from, to string, flags uint, st *unix.Stat_t) error {
	if err := x.move(from, to, flags, st); err != nil {
		return err
	}
	if o := x.env.Observer; o != nil {
		if flags&unix.RENAME_EXCHANGE != 0 {
			o.Exchanged(from, to)
		} else {
			o.Moved(from, to, x.identity(st), st.Nlink > 1 && st.Mode&syscall.S_IFMT != syscall.S_IFDIR)
		}
	}
	return nil
}

func (x *executor) move(from, to string, flags uint, st *unix.Stat_t) error {
	inName, in := aside.Name(to)
	outName, out := aside.Name(from)
	if in == out {
		return x.env.Tree.Rename(from, to, flags)
	}
	p := from
	if out {
		p = to
	}
	dir, name, err := x.env.Tree.Parent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if in {
		return x.env.Aside.MoveIn(dir, name, inName, st)
	}
	return x.env.Aside.MoveOut(outName, dir, name, st)
}

// remove undoes a creation: the object goes aside, where unrevert can
// find it.
func (x *executor) remove(s *Step) error {
	st, id, ok, err := x.stat(s.Path)
	if err != nil {
		return err
	}
	if !ok {
		if _, aid, aok, _ := x.stat(aside.Prefix + x.asideName(s)); aok && aid == s.Ino {
			return nil // done before a crash
		}
		return skipError{reason: reasonMismatch}
	}
	if id != s.Ino {
		return skipError{reason: reasonMismatch}
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		empty, err := x.env.Tree.Empty(s.Path)
		if err != nil {
			return err
		}
		if !empty {
			return skipError{reason: reasonNotEmpty}
		}
	}
	return x.putAside(s, st, id)
}

// putAside moves what s created (stat st, identity id) aside, journaled
// first.
func (x *executor) putAside(s *Step, st *unix.Stat_t, id uint64) error {
	name := x.asideName(s)
	if err := x.log.dirent(s.Path); err != nil {
		return err
	}
	rec := &journal.Record{Kind: journal.KindRemove, Path: s.Path, Aside: name, Ino: id,
		Type: st.Mode & syscall.S_IFMT, Attr: journal.AttrOf(st)}
	if err := x.log.add(rec, nil); err != nil {
		return err
	}
	return x.rename(s.Path, aside.Prefix+name, unix.RENAME_NOREPLACE, st)
}

// asideName is the name in the aside area of what step s removes.
func (x *executor) asideName(s *Step) string { return x.names + fmt.Sprint(s.Seq) }

// recover undoes a removal: the inode kept aside comes back.
func (x *executor) recover(s *Step) error {
	ap := aside.Prefix + s.Aside
	_, id, ok, err := x.stat(s.Path)
	if err != nil {
		return err
	}
	ast, _, aok, err := x.stat(ap)
	if err != nil {
		return err
	}
	switch {
	case ok && id == s.Ino && !aok:
		return nil // done before a crash
	case ok:
		return skipError{reason: reasonOccupied}
	case !aok:
		return skipError{reason: reasonNoAside}
	}
	if err := x.isKept(s, ast); err != nil {
		// Something replaced the kept inode behind cowfs's back: it is
		// not what the workspace held, so it does not go back.
		return skipError{reasonAsideChanged, ap + ": " + err.Error()}
	}
	if err := x.log.dirent(s.Path); err != nil {
		return err
	}
	rec := &journal.Record{Kind: journal.KindRename, Path: ap, Path2: s.Path, Ino: s.Ino, Type: ast.Mode & syscall.S_IFMT}
	if err := x.log.add(rec, nil); err != nil {
		return err
	}
	return x.rename(ap, s.Path, unix.RENAME_NOREPLACE, ast)
}

// isKept checks that the aside entry of step s (stat st) is the inode
// its record kept: the same inode number and, since a filesystem hands
// a freed number out again, the same type — so nothing put there
// behind cowfs's back comes into the workspace as a symlink, a device
// or a directory. (Size, times and owner may have changed since, through
// other hard links of the inode, and are not compared.)
func (x *executor) isKept(s *Step, st *unix.Stat_t) error {
	if id := x.identity(st); id != s.Ino {
		return fmt.Errorf("inode %d, not %d", id, s.Ino)
	}
	r, err := x.record(s.Seq)
	if err != nil {
		return err
	}
	want := r.Attr.Mode & syscall.S_IFMT
	if want == 0 {
		want = r.Type
	}
	if got := st.Mode & syscall.S_IFMT; got != want {
		return fmt.Errorf("type %o, not %o", got, want)
	}
	return nil
}

// renameBack undoes a rename: Path goes back to Path2, then a target it
// replaced comes back from the aside area.
func (x *executor) renameBack(s *Step) error {
	_, idA, okA, err := x.stat(s.Path2)
	if err != nil {
		return err
	}
	if !(okA && idA == s.Ino) { // not done before a crash
		st, err := x.holds(s.Path, s.Ino)
		if err != nil {
			return err
		}
		if okA {
			return skipError{reason: reasonOccupied}
		}
		if err := x.log.dirent(s.Path); err != nil {
			return err
		}
		if err := x.log.dirent(s.Path2); err != nil {
			return err
		}
		rec := &journal.Record{Kind: journal.KindRename, Path: s.Path, Path2: s.Path2, Ino: s.Ino, Type: st.Mode & syscall.S_IFMT}
		if err := x.log.add(rec, nil); err != nil {
			return err
		}
		if err := x.rename(s.Path, s.Path2, unix.RENAME_NOREPLACE, st); err != nil {
			return err
		}
	}
	if s.Aside == "" {
		return nil
	}
	return x.recover(&Step{Seq: s.Seq, Op: opRecover, Path: s.Path, Ino: s.Ino2, Aside: s.Aside})
}

// exchange undoes a RENAME_EXCHANGE by exchanging again.
func (x *executor) exchange(s *Step) error {
	_, idA, okA, err := x.stat(s.Path2)
	if err != nil {
		return err
	}
	_, idB, okB, err := x.stat(s.Path)
	if err != nil {
		return err
	}
	switch {
	case okA && okB && idA == s.Ino && idB == s.Ino2:
		return nil // done before a crash
	case !(okA && okB && idB == s.Ino && idA == s.Ino2):
		return skipError{reasonMismatch, fmt.Sprintf("%s is inode %d (want %d), %s is inode %d (want %d)", s.Path, idB, s.Ino, s.Path2, idA, s.Ino2)}
	}
	if err := x.log.dirent(s.Path); err != nil {
		return err
	}
	if err := x.log.dirent(s.Path2); err != nil {
		return err
	}
	rec := &journal.Record{Kind: journal.KindRename, Path: s.Path, Path2: s.Path2, Flags: unix.RENAME_EXCHANGE,
		Ino: s.Ino, Ino2: s.Ino2, Type: s.Type}
	if err := x.log.add(rec, nil); err != nil {
		return err
	}
	return x.rename(s.Path, s.Path2, unix.RENAME_EXCHANGE, &unix.Stat_t{})
}

// record reads the whole record a step undoes (records.go).
func (x *executor) record(seq uint64) (*journal.Record, error) {
	return x.records.get(x.env.Journal, seq)
}

// inPlace returns the record an in-place step undoes and the stat of
// the inode it changes, which must be at the step's path.
func (x *executor) inPlace(s *Step) (*journal.Record, *unix.Stat_t, error) {
	r, err := x.record(s.Seq)
	if err != nil {
		return nil, nil, err
	}
	st, err := x.holds(s.Path, s.Ino)
	return r, st, err
}

// attr puts attributes back: size (the bytes cut off are journaled
// first), owner, mode and times.
func (x *executor) attr(s *Step) error {
	r, st, err := x.inPlace(s)
	if err != nil {
		return err
	}
	typ := st.Mode & syscall.S_IFMT
	cause := journal.CauseMode
	if s.Dir {
		cause = journal.CauseDirent
	}
	if err := x.log.attr(s.Path, s.Ino, st, cause); err != nil {
		return err
	}
	if typ == syscall.S_IFREG && r.Attr.Size != st.Size {
		f, err := x.env.Tree.Open(s.Path, os.O_RDWR|unix.O_NOATIME, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := x.log.data(s.Path, s.Ino, f, st.Size, r.Attr.Size, st.Size); err != nil {
			return err
		}
		if err := f.Truncate(r.Attr.Size); err != nil {
			return err
		}
	}
	a := r.Attr
	if err := x.env.Tree.SetAttr(s.Path, a.Mode, a.Uid, a.Gid, a.Atime, a.Mtime, typ == syscall.S_IFLNK); err != nil {
		return err
	}
	x.changed(s.Path, s.Ino, st)
	return nil
}

// data puts overwritten bytes back; the bytes it overwrites in turn are
// journaled first.
func (x *executor) data(s *Step) error {
	r, st, err := x.inPlace(s)
	if err != nil {
		return err
	}
	f, err := x.env.Tree.Open(s.Path, os.O_RDWR|unix.O_NOATIME, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := x.log.attr(s.Path, s.Ino, st, journal.CauseWrite); err != nil {
		return err
	}
	if err := x.log.data(s.Path, s.Ino, f, st.Size, r.Off, r.Off+r.Len); err != nil {
		return err
	}
	err = x.env.Journal.ReadContent(r, func(off int64, b []byte) error {
		_, err := f.WriteAt(b, off)
		return err
	})
	if err != nil {
		return err
	}
	x.changed(s.Path, s.Ino, st)
	return nil
}

// xattr puts an extended attribute's old value back, or removes it.
func (x *executor) xattr(s *Step) error {
	r, st, err := x.inPlace(s)
	if err != nil {
		return err
	}
	if err := x.log.xattr(s.Path, s.Ino, r.XattrName, st.Mode&syscall.S_IFMT); err != nil {
		return err
	}
	if err := x.env.Tree.Setxattr(s.Path, r.XattrName, r.XattrValue, r.XattrExisted); err != nil {
		return err
	}
	x.changed(s.Path, s.Ino, st)
	return nil
}

func (x *executor) changed(p string, ino uint64, st *unix.Stat_t) {
	if o := x.env.Observer; o != nil {
		o.Changed(p, ino, st.Nlink > 1 && st.Mode&syscall.S_IFMT != syscall.S_IFDIR)
	}
}
