package rollback

import (
	"github.com/cowfs/cowfs/journal"
	"golang.org/x/sys/unix"
)

// liveIDs returns the identities record r names (Ino, Ino2) whose
// objects still exist, given the namespace just after r (at); 0 for one
// that is gone for good since — new in its epoch, then removed or
// replaced without being kept. The kernel frees such an inode, and its
// number can be another object's by the time a rollback plans: the
// agent's sed -i leaves its temporary file's number free, and the
// person's next file may get it. Conflicts are decided by identity
// (which changes the rollback does not undo touched which objects), so
// a freed number must not count: it would make a change to an unrelated
// object a conflict.
func liveIDs(r *rec, at *past) (ino, ino2 uint64) {
	alive := func(path string, id uint64) uint64 {
		if at.lookup(path).vanished() {
			return 0
		}
		return id
	}
	switch r.Kind {
	case journal.KindRemove:
		if r.Aside == "" {
			return 0, 0 // new in its epoch: really removed
		}
		return r.Ino, 0
	case journal.KindRename:
		if r.Flags&unix.RENAME_EXCHANGE != 0 {
			return alive(r.Path2, r.Ino), alive(r.Path, r.Ino2)
		}
		if r.Aside == "" {
			return alive(r.Path2, r.Ino), 0 // a target it replaced was new, and is gone
		}
		return alive(r.Path2, r.Ino), r.Ino2
	case journal.KindCreate, journal.KindLink:
		return 0, 0 // what they made has no identity in the record
	}
	return alive(r.Path, r.Ino), 0
}
