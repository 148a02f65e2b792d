package fs

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/backing"
)

// The mount negotiates CAP_HANDLE_KILLPRIV_V2: the kernel then stops
// asking for security.capability before every write and leaves it to
// the server to clear the set-user-ID and set-group-ID bits when an
// unprivileged process writes to or truncates a file (chown on the
// backing file clears them by itself). go-fuse does not pass the
// kernel's "kill" flags down to nodes, so "unprivileged" is taken to be
// "not uid 0": CAP_FSETID, which the kernel checks, belongs to root.
// Whether the caller is in the file's group is read from its
// supplementary groups (creds.go), only for a file with the
// set-group-ID bit and no group execution.
//
// The mode change is journaled like any other: it happens after the
// first touch of the epoch has recorded the file's attributes.

// killPriv clears the set-id bits of the open file fd that a write by
// caller c clears natively.
func killPriv(fd int, c caller) error {
	if c.uid == 0 {
		return nil
	}
	st, err := backing.Fstat(fd)
	if err != nil {
		return err
	}
	if mode, kill := withoutSetID(st, c); kill {
		return backing.Chmod(fd, mode)
	}
	return nil
}

// withoutSetID returns the permission bits of a file (stat st) without
// what a write or truncation by unprivileged caller c clears, as the
// kernel does (setattr_should_drop_sgid): set-user-ID always; set-group-
// ID if group execution is allowed, or if c is not in the file's group.
// Directories keep theirs.
func withoutSetID(st *unix.Stat_t, c caller) (uint32, bool) {
	perm := st.Mode & 07777
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return perm, false
	}
	kill := perm & syscall.S_ISUID
	if perm&syscall.S_ISGID != 0 && (perm&syscall.S_IXGRP != 0 || !c.inGroup(st.Gid)) {
		kill |= syscall.S_ISGID
	}
	return perm &^ kill, kill != 0
}
