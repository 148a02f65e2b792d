package conformance

import "golang.org/x/sys/unix"

func xattr(call, p string, args ...string) Op {
	o := op(call, p)
	o.Args = args
	return o
}

// moreCases: O_TMPFILE's modes, extended attributes' permissions,
// opening with O_TRUNC and O_CREAT on what exists, modes of symlinks.
func moreCases() []Case {
	tmpfile := func(dir, as string, mode uint32) Op {
		o := two("tmpfile", dir, as)
		o.Mode = mode
		return o
	}
	pwrite := func(p string, off, n int) Op { o := op("pwrite", p); o.Gid, o.Uid = off, n; return o }
	falloc := func(p string, mode, off, n int) Op {
		o := op("fallocate", p)
		o.Flags, o.Gid, o.Uid = mode, off, n
		return o
	}
	seek := func(p string, off int) Op { o := op("seek", p); o.Gid = off; return o }
	return []Case{{
		Name: "sparse-files-and-fallocate",
		Steps: []Step{as(root, 0o022,
			creat("s", 0o644), pwrite("s", 0, 5000), pwrite("s", 1<<20, 100), seek("s", 0), seek("s", 8192),
			falloc("s", unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096), seek("s", 0),
			falloc("s", unix.FALLOC_FL_PUNCH_HOLE, 0, 4096),
			falloc("s", unix.FALLOC_FL_ZERO_RANGE, 4096, 4096), falloc("s", unix.FALLOC_FL_KEEP_SIZE, 2<<20, 8192),
			// Not FALLOC_FL_COLLAPSE_RANGE or INSERT_RANGE: the kernel's
			// FUSE client refuses them (EOPNOTSUPP, fs/fuse/file.c) before
			// any FUSE filesystem sees them, as tmpfs does.
			falloc("s", 0, 3<<20, 4096), seek("s", 0), seek("s", 16384),
			two("copy", "s", "c"), creat("e", 0o644), seek("e", 0), truncate("e", 1<<20), seek("e", 0),
			falloc("d", 0, 0, 10), mkdir("d", 0o755), falloc("d", 0, 0, 10)),
			as(nobody, 0o022, falloc("s", 0, 0, 10), pwrite("s", 0, 1)),
		},
		Observe: []string{"s", "c", "e"},
	}, {
		Name: "tmpfile-modes",
		Steps: []Step{
			as(root, 0, mkdir("a", 0o777), run("setfacl", "-d", "-m", "u::rwx,g::rwx,o::rwx", "a"),
				mkdir("g", 0o2777), chown("g", 0, 4321)),
			as(nobody, 0o022, tmpfile(".", "t1", 0o666), tmpfile(".", "t2", 0o4777), tmpfile("a", "a/t", 0o666),
				tmpfile("g", "g/t", 0o2755)),
			as(nobody, 0o077, tmpfile(".", "t3", 0o777)),
		},
		Observe: []string{"t1", "t2", "t3", "a/t", "g/t"},
		Needs:   "setfacl",
	}, {
		Name: "xattr-permissions",
		Steps: []Step{
			as(root, 0, creat("r", 0o644), creat("w", 0o666), creat("n", 0o644), chown("n", 65534, 65534),
				symlink("n", "l"), mknod("p", unix.S_IFIFO|0o666, 0, 0), mkdir("s", 0o1777),
				xattr("setxattr", "r", "user.a", "1"), xattr("setxattr", "r", "trusted.a", "1")),
			as(nobody, 0o022,
				xattr("setxattr", "r", "user.b", "1"), xattr("getxattr", "r", "user.a"), xattr("removexattr", "r", "user.a"),
				xattr("setxattr", "w", "user.b", "1"), xattr("getxattr", "w", "user.b"), xattr("setxattr", "n", "user.c", "1"),
				xattr("setxattr", "l", "user.d", "1"), xattr("setxattr", "p", "user.e", "1"),
				xattr("setxattr", "n", "trusted.x", "1"), xattr("getxattr", "r", "trusted.a"),
				xattr("setxattr", "n", "security.x", "1"), xattr("getxattr", "n", "user.missing"),
				xattr("removexattr", "n", "user.missing"), xattr("setxattr", "s", "user.f", "1"),
				func() Op { o := xattr("setxattr", "w", "user.b", "2"); o.Flags = unix.XATTR_CREATE; return o }(),
				func() Op { o := xattr("setxattr", "w", "user.z", "2"); o.Flags = unix.XATTR_REPLACE; return o }()),
		},
		Observe: []string{"r", "w", "n", "l", "p", "s"},
	}, {
		Name: "open-existing",
		Steps: []Step{
			as(root, 0, creat("r", 0o644), creat("w", 0o666), mkdir("d", 0o755), symlink("r", "l"),
				symlink("d", "ld"), chmod("w", 0o666)),
			as(nobody, 0o022,
				open("r", unix.O_RDONLY|unix.O_TRUNC), open("r", unix.O_WRONLY|unix.O_CREAT), open("r", unix.O_RDONLY|unix.O_CREAT),
				open("w", unix.O_WRONLY|unix.O_TRUNC|unix.O_CREAT), open("l", unix.O_WRONLY), open("l", unix.O_RDONLY|unix.O_NOFOLLOW),
				open("l", unix.O_PATH|unix.O_NOFOLLOW), open("ld/x", unix.O_CREAT|unix.O_WRONLY), open("ld", unix.O_RDONLY|unix.O_DIRECTORY),
				open("d", unix.O_RDONLY|unix.O_CREAT), open("r", unix.O_RDONLY|unix.O_NOATIME)),
			as(root, 0o022, chmod("l", 0o600), op("chmod-nofollow", "l"), open("r", unix.O_RDONLY|unix.O_NOATIME),
				open("d", unix.O_WRONLY|unix.O_TMPFILE)),
		},
		Observe: []string{"r", "w", "d", "l", "ld"},
	}, {
		Name: "whiteout-rename",
		Steps: []Step{
			as(root, 0, creat("f", 0o644), renameFlags("f", "g", unix.RENAME_WHITEOUT), creat("h", 0o644),
				renameFlags("h", "g", unix.RENAME_WHITEOUT|unix.RENAME_NOREPLACE)),
			as(nobody, 0o022, creat("n", 0o644), renameFlags("n", "m", unix.RENAME_WHITEOUT)),
		},
		Observe: []string{"f", "g", "h", "n", "m"},
	}}
}
