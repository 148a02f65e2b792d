package rollback

import (
	"io"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// undoLog journals what a rollback is about to destroy, exactly as the
// mount journals an agent's changes (same record kinds, same rule: the
// record first), tagged with the rollback's group. Undoing those
// records is unrevert. A nil undoLog journals nothing: an unrevert is
// not itself undone.
type undoLog struct {
	j     *journal.Journal
	g     journal.Gate
	group uint64
	root  uint64 // root device

	attrs  map[uint64]bool // identities whose attributes are journaled
	xattrs map[string]bool // "identity/name" journaled
}

func (u *undoLog) add(rec *journal.Record, src io.ReaderAt) error {
	if u == nil {
		return nil
	}
	rec.Group = u.group
	if err := u.j.Append(u.g, rec, src); err != nil {
		return journalError{err}
	}
	return nil
}

// attr journals the attributes (stat st) of id at p before the
// rollback's first change to it.
func (u *undoLog) attr(p string, id uint64, st *unix.Stat_t, cause journal.Cause) error {
	if u == nil || u.attrs[id] {
		return nil
	}
	rec := &journal.Record{Kind: journal.KindAttr, Cause: cause, Path: p, Ino: id,
		Type: st.Mode & syscall.S_IFMT, Attr: journal.AttrOf(st)}
	if err := u.add(rec, nil); err != nil {
		return err
	}
	u.attrs[id] = true
	return nil
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
	return u.j.Discard(rec)
}

// data journals bytes [lo, hi) of id at p, read from f, as far as the
// file has them.
func (u *undoLog) data(p string, id uint64, f io.ReaderAt, size, lo, hi int64) error {
	hi = min(hi, size)
	if u == nil || lo >= hi {
		return nil
	}
	rec := &journal.Record{Kind: journal.KindData, Path: p, Ino: id, Type: syscall.S_IFREG, Off: lo, Len: hi - lo}
	return u.add(rec, f)
}

// xattr journals the current value of xattr name of o (at p).
func (u *undoLog) xattr(p string, o *object, name string) error {
	key := strconv.FormatUint(o.id, 10) + "/" + name
	if u == nil || u.xattrs[key] {
		return nil
	}
	val, ok, err := backing.Getxattr(o.fd, name)
	if err != nil {
		return err
	}
	rec := &journal.Record{Kind: journal.KindXattr, Path: p, Ino: o.id, Type: o.typ(),
		XattrName: name, XattrValue: val, XattrExisted: ok}
	if err := u.add(rec, nil); err != nil {
		return err
	}
	u.xattrs[key] = true
	return nil
}
