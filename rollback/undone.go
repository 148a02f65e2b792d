package rollback

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// A change outside the rolled-back turns (made while no turn was open,
// or by someone other than the agent) conflicts with the turns' changes
// to the same file because undoing them would destroy it. Once it is no
// longer in effect — the person put back what they changed — there is
// nothing left to destroy, and the conflict has gone away: the turns'
// changes to the file are undone, also those an earlier rollback skipped
// for it (Settle keeps them for that, report.go says "retried").
//
// The journal proves it only for changes made through the mount to a
// file in place — its bytes, size, mode, owner, xattrs — whose records
// hold what they destroyed: the change is no longer in effect when the
// file now holds what the oldest of those records say it held before,
// byte for byte in every range they overwrote, with the same size,
// type, mode and owner, and every xattr they changed as it was. Times
// are not compared: the person's own undo moves them, and the rollback
// puts the turn's back anyway. Anything else keeps the conflict: a
// change behind the mount (no pre-image: what it destroyed is unknown),
// a rename, removal, creation or link by someone else (the file the
// turns changed may not even be the one there now), or a change of the
// turns to the file made after the outside change (which then built on
// it).

// outsideInPlace is what changes outside the rolled-back turns did to
// one inode.
type outsideInPlace struct {
	loc    string   // where the inode is now (as the newest of them saw it)
	recs   []uint64 // the in-place changes, newest first
	oldest uint64   // the oldest of them
	mixed  bool     // also changed otherwise: never proven undone
}

// dropUndone removes from inos the inodes whose conflicts are changes no
// longer in effect, and notes those changes in p.notInEffect: they are
// not undone (they are not the turns'), and no path is skipped for them.
// recs are the records planned over, newest first; inos is what
// conflicts found.
func (p *planner) dropUndone(recs []rec, inos map[uint64]string) {
	// Most conflicts are not in place: then there is nothing to prove,
	// and no namespace to walk back.
	// (Records the top of a stack settled are neither: stack.go.)
	outsider := func(r *rec) bool { return !p.undoes(r) && !p.isSettled(r) && r.Kind != journal.KindEvent }
	found := false
	for i := range recs {
		r := &recs[i]
		if _, ok := inos[r.Ino]; ok && outsider(r) && inPlace(r) {
			found = true
			break
		}
	}
	if !found {
		return
	}
	outside := map[uint64]*outsideInPlace{}
	newestTurn := map[uint64]uint64{} // inode -> the newest change of the turns to it
	of := func(id uint64) *outsideInPlace {
		o := outside[id]
		if o == nil {
			o = &outsideInPlace{}
			outside[id] = o
		}
		return o
	}
	last := -1
	for i := range recs {
		if outsider(&recs[i]) {
			last = i
		}
	}
	past := newPast(p.asidePath)
	for i := range recs[:last+1] {
		r := &recs[i]
		if r.Kind == journal.KindEvent {
			continue
		}
		if p.isSettled(r) {
			past.undo(r)
			continue
		}
		ids := []uint64{r.Ino, r.Ino2}
		if r.Kind == journal.KindCreate || r.Kind == journal.KindLink {
			id, _ := p.identity(past.lookup(r.Path))
			ids = []uint64{id}
		}
		switch {
		case p.undoes(r):
			for _, id := range ids {
				if _, ok := inos[id]; ok && newestTurn[id] == 0 {
					newestTurn[id] = r.Seq
				}
			}
		case inPlace(r):
			o := of(r.Ino)
			if o.recs == nil {
				o.loc = past.lookup(r.Path).loc
			}
			o.recs, o.oldest = append(o.recs, r.Seq), r.Seq
		default:
			for _, id := range ids {
				if id != 0 {
					of(id).mixed = true
				}
			}
		}
		past.undo(r)
	}
	for id, o := range outside {
		if _, ok := inos[id]; !ok || o.mixed || newestTurn[id] > o.oldest {
			continue
		}
		if p.undoneOutside(id, o) {
			delete(inos, id)
			if p.notInEffect == nil {
				p.notInEffect = map[uint64]bool{}
			}
			for _, seq := range o.recs {
				p.notInEffect[seq] = true
			}
		}
	}
}

// inPlace reports whether r, a change outside the rolled-back turns,
// changed an inode in place and holds what it destroyed.
func inPlace(r *rec) bool {
	switch r.Kind {
	case journal.KindData, journal.KindXattr:
		return true
	case journal.KindAttr:
		return r.Cause != journal.CauseDirent
	}
	return false
}

// undoneOutside reports whether inode id, changed in place outside the
// rolled-back turns by the records o names, holds again what it held
// before them.
func (p *planner) undoneOutside(id uint64, o *outsideInPlace) bool {
	if aside.Private(o.loc) {
		return false
	}
	fd, err := p.env.Tree.OpenFd(o.loc, unix.O_PATH, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	st, err := backing.Fstat(fd)
	if err != nil || journal.InodeID(st.Dev, st.Ino, p.env.RootDev) != id {
		return false
	}
	// Oldest first: for each byte, attribute and xattr, the oldest
	// record says what it was before any of them.
	var recs []*journal.Record
	for _, seq := range slices.Backward(o.recs) {
		r, err := p.env.Journal.Record(seq)
		if err != nil {
			return false
		}
		recs = append(recs, r)
	}
	var attr *journal.Attr
	xattrs := map[string]bool{}
	var data []*journal.Record
	for _, r := range recs {
		switch r.Kind {
		case journal.KindAttr:
			if attr == nil {
				attr = &r.Attr
			}
		case journal.KindXattr:
			if xattrs[r.XattrName] {
				continue
			}
			xattrs[r.XattrName] = true
			v, ok, err := backing.Getxattr(fd, r.XattrName)
			if err != nil || ok != r.XattrExisted || ok && !bytes.Equal(v, r.XattrValue) {
				return false
			}
		case journal.KindData:
			data = append(data, r)
		}
	}
	if attr != nil && (attr.Mode != st.Mode || attr.Uid != st.Uid || attr.Gid != st.Gid ||
		st.Mode&syscall.S_IFMT == syscall.S_IFREG && attr.Size != st.Size) {
		return false
	}
	if len(data) == 0 {
		return true
	}
	if attr == nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return false // the size they cut off or extended is unknown
	}
	rfd, err := backing.Reopen(fd, unix.O_RDONLY|unix.O_NOATIME)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(rfd), o.loc)
	defer f.Close()
	return p.sameBytes(f, data, attr.Size)
}

// sameBytes reports whether f holds, in every range the data records
// recs (oldest first) overwrote below size (the file's size before
// them: bytes beyond did not exist then), the bytes the oldest record
// covering each byte kept: zeros where it kept a hole.
func (p *planner) sameBytes(f *os.File, recs []*journal.Record, size int64) bool {
	covered := []span{{size, 1<<63 - 1}} // by older records, sorted, disjoint
	buf := make([]byte, 64<<10)
	same := func(off int64, want []byte) bool {
		for len(want) > 0 {
			n := min(len(want), len(buf))
			if got, err := f.ReadAt(buf[:n], off); got < n || err != nil && err != io.EOF {
				return false
			} else if !bytes.Equal(buf[:n], want[:n]) {
				return false
			}
			off, want = off+int64(n), want[n:]
		}
		return true
	}
	zeros := make([]byte, len(buf))
	for _, r := range recs {
		fresh := uncovered(span{r.Off, r.Off + r.Len}, covered)
		ok := true
		err := p.env.Journal.ReadContent(r, func(off int64, b []byte) error {
			for _, s := range fresh {
				lo, hi := max(off, s.lo), min(off+int64(len(b)), s.hi)
				if lo < hi && !same(lo, b[lo-off:hi-off]) {
					ok = false
					return errDiffers
				}
			}
			return nil
		})
		if err != nil || !ok {
			return false
		}
		for _, h := range r.Holes {
			for _, s := range fresh {
				for lo, hi := max(h.Off, s.lo), min(h.Off+h.Len, s.hi); lo < hi; {
					n := min(hi-lo, int64(len(zeros)))
					if !same(lo, zeros[:n]) {
						return false
					}
					lo += n
				}
			}
		}
		covered = addSpan(covered, span{r.Off, r.Off + r.Len})
	}
	return true
}

// errDiffers stops reading a record's content at the first difference.
var errDiffers = errors.New("differs")

// span is the byte range [lo, hi).
type span struct{ lo, hi int64 }

// uncovered returns the parts of s that no span of covered (sorted,
// disjoint) holds.
func uncovered(s span, covered []span) []span {
	var out []span
	for _, c := range covered {
		if c.hi <= s.lo || c.lo >= s.hi {
			continue
		}
		if c.lo > s.lo {
			out = append(out, span{s.lo, c.lo})
		}
		s.lo = max(s.lo, c.hi)
	}
	if s.lo < s.hi {
		out = append(out, s)
	}
	return out
}

// addSpan adds s to covered (sorted, disjoint), merging what overlaps.
func addSpan(covered []span, s span) []span {
	var out []span
	for _, c := range covered {
		switch {
		case c.hi < s.lo:
			out = append(out, c)
		case c.lo > s.hi:
			out = append(out, s)
			s = c
		default:
			s = span{min(s.lo, c.lo), max(s.hi, c.hi)}
		}
	}
	return append(out, s)
}
