package fs

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The mount negotiates CAP_HANDLE_KILLPRIV_V2: the kernel then stops
// asking for security.capability before every write and leaves it to
// the server to clear the set-user-ID and set-group-ID bits when an
// unprivileged process writes to or truncates a file (chown on the
// backing file clears them by itself). go-fuse does not pass the
// kernel's "kill" flags down to nodes, so "unprivileged" is taken to be
// "not uid 0": CAP_FSETID, which the kernel checks, belongs to root.
//
// The mode change is journaled like any other: it happens after the
// first touch of the epoch has recorded the file's attributes.

// killPriv clears the set-id bits of the open file fd if uid may not
// keep them.
func killPriv(fd int, uid uint32) error {
	if uid == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if mode, kill := withoutSetID(st.Mode); kill {
		return unix.Fchmod(fd, mode)
	}
	return nil
}

// withoutSetID returns mode's permission bits without what a write by
// an unprivileged process clears: set-user-ID, and set-group-ID when
// group execution is allowed (without it, the bit marks mandatory
// locking and stays).
func withoutSetID(mode uint32) (uint32, bool) {
	perm := mode & 07777
	kill := perm&syscall.S_ISUID != 0 || (perm&syscall.S_ISGID != 0 && perm&syscall.S_IXGRP != 0)
	if !kill {
		return perm, false
	}
	perm &^= syscall.S_ISUID
	if perm&syscall.S_IXGRP != 0 {
		perm &^= syscall.S_ISGID
	}
	return perm, true
}
