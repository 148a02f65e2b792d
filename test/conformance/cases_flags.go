package conformance

import "golang.org/x/sys/unix"

func chattr(p, flag string) Op {
	o := op("chattr", p)
	o.Args = []string{flag}
	return o
}

// flagCases: immutable and append-only files (chattr +i, +a). What the
// backing filesystem refuses fails through the mount with the same
// errno (and leaves no record: test/e2e), and appends to an append-only
// file work. Opening for writing is not among the calls on its own:
// the kernel checks the flags at open natively, but knows no flags of a
// FUSE inode, so through the mount the open succeeds and the first
// write fails, with the same EPERM; and a write at the end of an
// append-only file through a descriptor opened without O_APPEND, which
// natively could not have been opened, appends.
func flagCases() []Case {
	pwrite := func(p string, off, n int) Op { o := op("pwrite", p); o.Gid, o.Uid = off, n; return o }
	return []Case{{
		Name: "immutable",
		Steps: []Step{
			as(root, 0o022, creat("f", 0o644), pwrite("f", 0, 5), mkdir("d", 0o777), creat("d/g", 0o644),
				chattr("f", "+i"), chattr("d", "+i")),
			as(root, 0o022, chmod("f", 0o600), chown("f", 65534, 65534), op("utime-set", "f"), op("utime-now", "f"),
				truncate("f", 0), open("f", unix.O_WRONLY|unix.O_TRUNC), op("write", "f"), op("append", "f"),
				xattr("setxattr", "f", "user.a", "1"), xattr("removexattr", "f", "user.a"),
				op("unlink", "f"), rename("f", "x"), link("f", "y"), rename("d/g", "z"),
				mkdir("d/s", 0o755), creat("d/n", 0o644), op("unlink", "d/g"), chmod("d", 0o700),
				op("utime-set", "d")),
			as(root, 0, chattr("f", "-i"), chattr("d", "-i")),
		},
		Observe: []string{"f", "d", "d/g", "x", "y", "z"},
		Needs:   "chattr",
	}, {
		Name: "append-only",
		Steps: []Step{
			// Empty: the daemon keeps a descriptor it wrote through
			// for a while, and one opened before the flag was set
			// writes anywhere, natively too.
			as(root, 0o022, creat("f", 0o644), chattr("f", "+a")),
			as(root, 0o022, op("append", "f"), op("append", "f"), op("write", "f"), pwrite("f", 1, 1),
				truncate("f", 0), open("f", unix.O_WRONLY|unix.O_TRUNC), chmod("f", 0o600), op("utime-set", "f"),
				op("utime-now", "f"), xattr("setxattr", "f", "user.a", "1"),
				op("unlink", "f"), rename("f", "x"), link("f", "y")),
			as(nobody, 0o022, op("append", "f")),
			as(root, 0, chattr("f", "-a")),
		},
		Observe: []string{"f", "x", "y"},
		Needs:   "chattr",
	}}
}
