// Package backing is the one way cowfs touches the backing directory —
// the workspace on disk — and its own private area inside it.
//
// The workspace's contents come from anywhere (a cloned repository, a
// tarball, an agent running arbitrary shell, another user), and the
// daemon runs as root. So nothing here takes an absolute path: every
// access starts from a descriptor of the backing root and resolves
// beneath it with openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or with
// *at calls on a descriptor and a single name with AT_SYMLINK_NOFOLLOW.
// A symlink planted anywhere in the workspace, or a directory swapped
// for one between two calls, makes an operation fail (ELOOP, EXDEV),
// never reach outside the root.
//
// Imports: x/sys/unix and the standard library only.
package backing
