// Package conformance checks that a cowfs mount with a turn open behaves
// as the filesystem under it: every case runs once in a plain directory
// and once in the mount, and the two runs must agree on the result of
// each call (the errno of each refusal) and on what is left behind
// (types, modes with their set-id and sticky bits, owners, link counts,
// device numbers, access control lists).
//
// # How a case runs
//
// A case is a list of steps; a step is a list of calls made by one
// process with one identity (uid, gid, supplementary groups) and one
// umask. Each step runs in a child process — the test binary itself,
// started with the step in its environment (see Child) — with
// SysProcAttr.Credential set, so the kernel checks the permissions of a
// real non-root caller on both sides, as it would for a compiler or a
// package manager run by an unprivileged user. The child prints the
// result of each call; the parent then lstats the paths the case names
// as root. The plain directory and the mount's backing directory are on
// the same filesystem, so any difference is cowfs's.
//
// What differs only by design is not compared: inode numbers, times
// (beyond the errno of the calls that set them) and directory sizes.
package conformance
