package rollback

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// The steps that move objects: removes (aside), recoveries (back from
// aside), renames and exchanges undone. Each opens the directories it
// names once and checks and moves entries through them (object.go).

// remove undoes a creation: the object goes aside, where unrevert can
// find it.
func (x *executor) remove(s *Step) error {
	sl, err := x.openSlot(s.Path)
	if err != nil {
		return err
	}
	defer sl.close()
	return x.removeIn(s, sl)
}

// removeIn is remove with the slot of s.Path open.
func (x *executor) removeIn(s *Step, sl *slot) error {
	st, id, ok, err := x.statSlot(sl)
	if err != nil {
		return err
	}
	if !ok {
		if ast, err := x.env.Aside.Stat(x.asideName(s)); err == nil && x.identity(ast) == s.Ino {
			return nil // done before a crash
		}
		return skipError{reason: reasonMismatch}
	}
	if id != s.Ino {
		return skipError{reason: reasonMismatch}
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		empty, err := x.emptyDir(sl, id)
		if err != nil {
			return err
		}
		if !empty {
			return skipError{reason: reasonNotEmpty}
		}
	}
	return x.putAside(s, sl, st, id)
}

// emptyDir reports whether the directory in slot sl, which must be
// identity id, has no entries.
func (x *executor) emptyDir(sl *slot, id uint64) (bool, error) {
	f, err := x.openDir(sl, id)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return backing.EmptyDir(f)
}

// openDir opens the directory in slot sl for reading and checks that it
// is identity id.
func (x *executor) openDir(sl *slot, id uint64) (*os.File, error) {
	fd, err := unix.Openat(sl.dir, sl.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: sl.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), sl.path)
	st, err := backing.Fstat(fd)
	if err != nil {
		f.Close()
		return nil, err
	}
	if got := x.identity(st); got != id {
		f.Close()
		return nil, errRaced(fmt.Sprintf("%s became inode %d, not %d", sl.path, got, id))
	}
	return f, nil
}

// putAside moves what s created (in slot sl, stat st, identity id)
// aside, journaled first.
func (x *executor) putAside(s *Step, sl *slot, st *unix.Stat_t, id uint64) error {
	name := x.asideName(s)
	if err := x.log.dirent(sl); err != nil {
		return err
	}
	rec := &journal.Record{Kind: journal.KindRemove, Path: s.Path, Aside: name, Ino: id,
		Type: st.Mode & syscall.S_IFMT, Attr: journal.AttrOf(st)}
	if err := x.log.add(rec, nil); err != nil {
		return err
	}
	to := &slot{dir: -1, name: name, path: aside.Prefix + name, area: name}
	return x.move(rec, sl, to, unix.RENAME_NOREPLACE, st, id)
}

// asideName is the name in the aside area of what step s removes.
func (x *executor) asideName(s *Step) string { return x.names + fmt.Sprint(s.Seq) }

// recover undoes a removal: the inode kept aside comes back.
func (x *executor) recover(s *Step) error {
	sl, err := x.openSlot(s.Path)
	if err != nil {
		return err
	}
	defer sl.close()
	return x.recoverInto(s, sl)
}

func (x *executor) recoverInto(s *Step, sl *slot) error {
	_, id, ok, err := x.statSlot(sl)
	if err != nil {
		return err
	}
	ap := aside.Prefix + s.Aside
	ast, err := x.env.Aside.Stat(s.Aside)
	aok := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	switch {
	case ok && id == s.Ino && !aok:
		return nil // done before a crash
	case ok:
		return skipError{reason: reasonOccupied}
	case !aok:
		return skipError{reason: reasonNoAside}
	case sl.dir < 0:
		return skipError{reasonMismatch, fmt.Sprintf("the directory of %s is missing, or not a directory", s.Path)}
	}
	if err := x.isKept(s, ast); err != nil {
		// Something replaced the kept inode behind cowfs's back: it is
		// not what the workspace held, so it does not go back.
		return skipError{reasonAsideChanged, ap + ": " + err.Error()}
	}
	if err := x.log.dirent(sl); err != nil {
		return err
	}
	rec := &journal.Record{Kind: journal.KindRename, Path: ap, Path2: s.Path, Ino: s.Ino, Type: ast.Mode & syscall.S_IFMT}
	if err := x.log.add(rec, nil); err != nil {
		return err
	}
	from := &slot{dir: -1, name: s.Aside, path: ap, area: s.Aside}
	return x.move(rec, from, sl, unix.RENAME_NOREPLACE, ast, s.Ino)
}

// keptThere checks that the aside area holds the inode step s brings
// back, as recoverInto will.
func (x *executor) keptThere(s *Step) error {
	ast, err := x.env.Aside.Stat(s.Aside)
	if errors.Is(err, os.ErrNotExist) {
		return skipError{reason: reasonNoAside}
	}
	if err != nil {
		return err
	}
	if err := x.isKept(s, ast); err != nil {
		return skipError{reasonAsideChanged, aside.Prefix + s.Aside + ": " + err.Error()}
	}
	return nil
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
	src, dst, err := x.openSlots(s.Path, s.Path2)
	if err != nil {
		return err
	}
	defer src.close()
	defer dst.close()
	_, idA, okA, err := x.statSlot(dst)
	if err != nil {
		return err
	}
	if !(okA && idA == s.Ino) { // not done before a crash
		st, id, ok, err := x.statSlot(src)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			return skipError{reasonMismatch, fmt.Sprintf("%s is missing", s.Path)}
		case id != s.Ino:
			return skipError{reasonMismatch, fmt.Sprintf("%s is inode %d, not %d", s.Path, id, s.Ino)}
		case okA:
			return skipError{reason: reasonOccupied}
		case dst.dir < 0 && dst.area == "":
			return skipError{reasonMismatch, fmt.Sprintf("the directory of %s is missing, or not a directory", s.Path2)}
		}
		if s.Aside != "" {
			// The target it replaced must come back too: if it cannot,
			// the rename stays as well, and the step is skipped whole
			// (a skipped record stays in effect, all of it).
			if err := x.keptThere(&Step{Seq: s.Seq, Ino: s.Ino2, Aside: s.Aside}); err != nil {
				return err
			}
		}
		if err := x.log.dirent(src); err != nil {
			return err
		}
		if err := x.log.dirent(dst); err != nil {
			return err
		}
		rec := &journal.Record{Kind: journal.KindRename, Path: s.Path, Path2: s.Path2, Ino: s.Ino, Type: st.Mode & syscall.S_IFMT}
		if err := x.log.add(rec, nil); err != nil {
			return err
		}
		if err := x.move(rec, src, dst, unix.RENAME_NOREPLACE, st, s.Ino); err != nil {
			return err
		}
	}
	if s.Aside == "" {
		return nil
	}
	return x.recoverInto(&Step{Seq: s.Seq, Op: opRecover, Path: s.Path, Ino: s.Ino2, Aside: s.Aside}, src)
}

// exchange undoes a RENAME_EXCHANGE by exchanging again.
func (x *executor) exchange(s *Step) error {
	b, a, err := x.openSlots(s.Path, s.Path2)
	if err != nil {
		return err
	}
	defer a.close()
	defer b.close()
	_, idA, okA, err := x.statSlot(a)
	if err != nil {
		return err
	}
	_, idB, okB, err := x.statSlot(b)
	if err != nil {
		return err
	}
	switch {
	case okA && okB && idA == s.Ino && idB == s.Ino2:
		return nil // done before a crash
	case !(okA && okB && idB == s.Ino && idA == s.Ino2):
		return skipError{reasonMismatch, fmt.Sprintf("%s is inode %d (want %d), %s is inode %d (want %d)", s.Path, idB, s.Ino, s.Path2, idA, s.Ino2)}
	case a.area != "" || b.area != "":
		return fmt.Errorf("rollback: exchange with the aside area: %s, %s", s.Path, s.Path2)
	}
	if err := x.log.dirent(b); err != nil {
		return err
	}
	if err := x.log.dirent(a); err != nil {
		return err
	}
	rec := &journal.Record{Kind: journal.KindRename, Path: s.Path, Path2: s.Path2, Flags: unix.RENAME_EXCHANGE,
		Ino: s.Ino, Ino2: s.Ino2, Type: s.Type}
	if err := x.log.add(rec, nil); err != nil {
		return err
	}
	if err := unix.Renameat2(b.dir, b.name, a.dir, a.name, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "rename", Old: s.Path, New: s.Path2, Err: err}
	}
	// As for a move (below), but both ways: each name must now hold the
	// other's inode, or the exchange is exchanged back.
	_, gotA, okA, errA := x.statSlot(a)
	_, gotB, okB, errB := x.statSlot(b)
	if errA != nil || errB != nil || !okA || !okB || gotA != s.Ino || gotB != s.Ino2 {
		back := unix.Renameat2(b.dir, b.name, a.dir, a.name, unix.RENAME_EXCHANGE)
		return x.raced(rec, fmt.Sprintf("%s and %s held inodes %d and %d after the exchange, not %d and %d",
			s.Path2, s.Path, gotA, gotB, s.Ino, s.Ino2), back)
	}
	if o := x.env.Observer; o != nil {
		o.Exchanged(s.Path, s.Path2)
	}
	return nil
}

// move renames the object in slot from (stat st, identity id, which the
// caller checked) to slot to, never replacing anything there, after its
// undo record rec; then checks that what arrived is that object. If
// something else took its place between the check and the rename, it
// goes back where it came from, rec is withdrawn and the step is skipped
// as raced. Moves into and out of the aside area go through the area,
// which keeps its link counts and checks the same way.
func (x *executor) move(rec *journal.Record, from, to *slot, flags uint, st *unix.Stat_t, id uint64) error {
	var err error
	switch {
	case to.area != "" && from.area != "":
		return fmt.Errorf("rollback: move within the aside area: %s to %s", from.path, to.path)
	case to.area != "":
		err = x.env.Aside.MoveIn(from.dir, from.name, to.area, st)
		if errors.Is(err, aside.ErrReplaced) {
			var back error
			if _, serr := x.env.Aside.Stat(to.area); serr == nil {
				back = errors.New("kept in the aside area with this step's record")
			}
			return x.raced(rec, err.Error(), back)
		}
	case from.area != "":
		err = x.env.Aside.MoveOut(from.area, to.dir, to.name, st) // from the area: nothing else can be there
	default:
		err = unix.Renameat2(from.dir, from.name, to.dir, to.name, flags)
		if err != nil {
			err = &os.LinkError{Op: "rename", Old: from.path, New: to.path, Err: err}
			break
		}
		if _, got, ok, serr := x.statSlot(to); serr != nil || !ok || got != id {
			back := unix.Renameat2(to.dir, to.name, from.dir, from.name, unix.RENAME_NOREPLACE)
			return x.raced(rec, fmt.Sprintf("%s held inode %d when moved to %s, not %d", from.path, got, to.path, id), back)
		}
	}
	if err != nil {
		return err
	}
	if o := x.env.Observer; o != nil {
		o.Moved(from.path, to.path, id, st.Nlink > 1 && st.Mode&syscall.S_IFMT != syscall.S_IFDIR)
	}
	return nil
}

// raced ends a step whose move took another object than the one it
// checked: put back (back is how that went), its undo record withdrawn.
// If the other object could not be put back, the step is still skipped
// — it did not do what it was for — and the report says where that
// object went.
func (x *executor) raced(rec *journal.Record, detail string, back error) error {
	if back != nil {
		return errRaced(fmt.Sprintf("%s; it could not be put back (%v)", detail, back))
	}
	if err := x.log.discard(rec); err != nil && x.env.Log != nil {
		x.env.Log.Warn("withdrawing the undo record of a raced step", "seq", rec.Seq, "err", err)
	}
	return errRaced(detail + "; put back")
}
