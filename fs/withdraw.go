package fs

import (
	"errors"
	"syscall"
)

// A failed operation leaves no record. A change journals what its
// operation is about to destroy before the operation runs, so when the
// backing filesystem then refuses the operation (EPERM on an immutable
// file, EACCES, EROFS, ENOTEMPTY …) the journal holds records of a
// change that never happened. Kept, they are listed as the turn's
// changes, and a rollback tries to undo them: putting the attributes
// of an immutable file back fails, and stops the rollback.
//
// So every change knows whether its operation reached the backing
// directory: each system call that changes it reports its outcome
// through did, and an operation that fails ends with fail. If nothing
// reached the backing directory, fail withdraws every record the change
// made, newest first, and forgets what they marked as journaled in the
// epoch's per-inode state (capture.Op.Withdraw): otherwise the next
// real change of those bytes or attributes would find them journaled
// and journal nothing. The change's stamps go too, since the inodes did
// not change (see recorder.stamps).
//
// A change that changed something before it failed — a SETATTR whose
// chmod succeeded and whose chown was refused, a rename whose target
// could not be put back — keeps its records: they describe what the
// backing directory went through. So does a change whose system call
// failed in a way that may have done part of the work (EIO, ENOSPC
// in a fallocate): a record of a change that did not happen is
// harmless for a file that can be changed back; one missing for a
// change that did happen loses the pre-image.
//
// A record is withdrawn only while no other change has taken the state
// of its inode since it was made: another change may have found the
// record's bytes or attributes journaled and gone on without a record of
// its own, relying on this one (package capture). The kernel serializes
// most changes of one inode (it holds the inode's lock for writes,
// truncations and attribute changes), so this keeps a record only in
// rare races.
//
// Crash safety. A withdrawal is logged like the record was (the record
// log, in the kernel's page cache at least), after the operation
// failed. Killed in between, the daemon leaves the record: a record
// whose operation did not happen, as when it is killed between a record
// and its operation, which the journal's ordering (record first) always
// allowed. A rollback then undoes a change that did not happen: it
// finds things as the record says they were, and at worst (an immutable
// file) reports the path it could not restore.

// did notes the outcome of a system call that changes the backing
// directory for the change, and returns err: unless the call was
// refused with nothing done (refused), the change has landed and keeps
// its records whatever happens next.
func (c *change) did(err error) error {
	if err == nil || !refused(err) {
		c.landed = true
	}
	return err
}

// fail ends a change whose operation failed with err, and returns the
// errno for the kernel. Unless something reached the backing directory
// (did), the change's records are withdrawn.
func (c *change) fail(err error) syscall.Errno {
	if !c.landed {
		c.withdraw()
	}
	return errno(err)
}

// withdraw withdraws every record the change made, newest first, each
// with what it marked journaled, as far as no other change relied on
// it, and forgets the change's stamps.
func (c *change) withdraw() {
	c.op.Withdraw()
	c.touched = nil
}

// refused reports whether a system call that failed with err did
// nothing: a refusal the kernel or the filesystem makes before it
// changes anything. EIO, ENOSPC and EDQUOT are not among them: a
// filesystem may fail so in the middle of the work (ext4 grows a file
// chunk by chunk in a fallocate that then runs out of space). Errors
// that are not errnos (credentials that could not be restored after
// the call) are not either.
func refused(err error) bool {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return false
	}
	switch e {
	case syscall.EPERM, syscall.EACCES, syscall.EROFS, syscall.EEXIST, syscall.ENOENT,
		syscall.ENOTDIR, syscall.EISDIR, syscall.ENOTEMPTY, syscall.EXDEV, syscall.EINVAL,
		syscall.EBUSY, syscall.ETXTBSY, syscall.EMLINK, syscall.ENAMETOOLONG, syscall.ELOOP,
		syscall.ENODATA, syscall.EOPNOTSUPP, syscall.EBADF, syscall.ESTALE, syscall.ERANGE,
		syscall.E2BIG, syscall.EFBIG, syscall.ENOSYS:
		return true
	}
	return false
}
