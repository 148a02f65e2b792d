package conformance

import "golang.org/x/sys/unix"

// permissionCases: who may change modes, owners and times; who may
// create, remove and rename in read-only, unsearchable and sticky
// directories.
func permissionCases() []Case {
	return []Case{{
		Name: "chmod-chown-utimes",
		Steps: []Step{
			as(root, 0, creat("r", 0o644), creat("w", 0o666), creat("n", 0o644), chown("n", 65534, 65534),
				symlink("n", "ln"), creat("x", 0o640), chown("x", 0, 4321)),
			as(nobody, 0o022,
				chmod("r", 0o777), chown("r", 65534, -1), chown("n", 0, -1), chown("n", -1, 4321),
				chown("n", -1, 65534), chown("n", 65534, 65534), chown("n", -1, -1), op("lchown", "ln"),
				op("utime-now", "r"), op("utime-now", "w"), op("utime-set", "w"), op("utime-omit-now", "w"),
				op("utime-set", "n"), op("utime-now", "n"), truncate("r", 1), truncate("w", 5),
				op("write", "r"), op("write", "x"), chmod("n", 0o4755), chmod("w", 0o600),
				op("utime-now", "missing")),
			as(member, 0o022, op("write", "x"), chown("x", -1, 4321), op("utime-now", "x")),
		},
		Observe: []string{"r", "w", "n", "ln", "x"},
	}, {
		Name: "read-only-and-unsearchable-directories",
		Steps: []Step{
			as(root, 0, mkdir("ro", 0o755), creat("ro/f", 0o666), mkdir("ro/d", 0o777), chmod("ro", 0o555),
				mkdir("ns", 0o776), creat("ns/f", 0o666), mkdir("w", 0o777)),
			as(nobody, 0o022, creat("ro/g", 0o644), mkdir("ro/e", 0o755), op("unlink", "ro/f"),
				op("rmdir", "ro/d"), rename("ro/f", "w/f"), rename("w/f", "ro/f"), mknod("ro/p", unix.S_IFIFO|0o644, 0, 0),
				op("write", "ro/f"), creat("ro/d/new", 0o644), symlink("x", "ro/l"), link("ro/f", "w/lf"),
				op("stat", "ns/f"), op("write", "ns/f"), creat("ns/g", 0o644), op("unlink", "ns/f")),
		},
		Observe: []string{"ro", "ro/f", "ro/d", "ro/d/new", "ro/g", "ns", "ns/f", "w/lf"},
	}, {
		Name: "sticky-directory",
		Steps: []Step{
			as(root, 0, mkdir("s", 0o1777), mkdir("so", 0o1777), chown("so", 65534, 65534), mkdir("t", 0o777)),
			as(alice, 0o022, creat("s/a", 0o666), mkdir("s/ad", 0o777), creat("s/a2", 0o666), creat("so/a", 0o644),
				creat("s/a3", 0o666)),
			as(nobody, 0o022, creat("s/b", 0o644), creat("s/b2", 0o644),
				op("unlink", "s/a"), rename("s/a", "s/x"), rename("s/b", "s/a2"), op("rmdir", "s/ad"),
				rename("s/a", "t/a"), renameFlags("s/b2", "s/a3", unix.RENAME_EXCHANGE),
				op("write", "s/a"), rename("s/b", "s/c"), op("unlink", "s/b2"),
				op("unlink", "so/a")),
		},
		Observe: []string{"s", "s/a", "s/a2", "s/a3", "s/ad", "s/b", "s/b2", "s/c", "s/x", "so", "so/a", "t/a"},
	}}
}
