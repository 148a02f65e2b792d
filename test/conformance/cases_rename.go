package conformance

import (
	"strings"

	"golang.org/x/sys/unix"
)

// renameCases: rename's refusals (POSIX and Linux's renameat2 flags),
// and the permissions a non-root caller needs: write and search on both
// parents, and write on a directory moved to another parent (its ".."
// changes).
func renameCases() []Case {
	return []Case{{
		Name: "rename-errors",
		Steps: []Step{as(root, 0o022,
			creat("f", 0o644), creat("g", 0o644), mkdir("d", 0o755), mkdir("d/sub", 0o755), mkdir("e", 0o755),
			creat("e/x", 0o644), mkdir("d2", 0o755), symlink("f", "l"),
			rename("f", "d"), rename("d", "f"), rename("d", "e"), rename("d", "d/sub/in"), rename("d", "d/sub"),
			rename("missing", "x"), rename("f", "missing/x"), rename("f", "g/x"), rename(".", "x"),
			rename("d", "."), rename("d/sub", "d/sub/.."),
			renameFlags("f", "g", unix.RENAME_NOREPLACE), renameFlags("f", "missing", unix.RENAME_EXCHANGE),
			renameFlags("f", "g", unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE),
			rename("f", "{other}/f"), rename("f", "f"), rename("l", "l2"),
			renameFlags("f", "d2", unix.RENAME_EXCHANGE), rename("d", "d2x"), rename("d2x", "e2"),
			rename("f", "{long}"), rename("e2", "g"),
		)},
		Observe: []string{"f", "g", "d", "d2", "d2x", "e", "e/x", "e2", "e2/sub", "l", "l2", "missing"},
	}, {
		Name: "rename-permissions",
		Steps: []Step{
			as(root, 0, mkdir("a", 0o777), mkdir("b", 0o777), mkdir("a/x", 0o755), creat("a/f", 0o644),
				mkdir("ro", 0o555), mkdir("a/y", 0o777), creat("a/y/z", 0o644), creat("a/g", 0o644)),
			as(nobody, 0o022,
				rename("a/x", "b/x"), rename("a/f", "b/f"), rename("b/f", "ro/f"), mkdir("a/own", 0o755),
				rename("a/own", "b/own"), rename("a/y", "b/y"), rename("a/x", "a/x2"),
				rename("b/own", "a/g"), rename("a/g", "b/own"), renameFlags("a/x2", "b/own", unix.RENAME_EXCHANGE)),
		},
		Observe: []string{"a", "b", "a/x", "a/x2", "b/x", "a/f", "b/f", "a/own", "b/own", "a/y", "b/y", "a/g"},
	}}
}

// linkCases: link counts of files and directories as names come and go,
// links refused (directories, other filesystems, protected_hardlinks).
func linkCases() []Case {
	return []Case{{
		Name: "hard-links",
		Steps: []Step{
			as(root, 0o022, creat("f", 0o644), link("f", "l1"), link("f", "l2"), link("f", "l3"),
				op("unlink", "l1"), rename("l2", "f"), rename("f", "l3"),
				mkdir("d", 0o755), mkdir("d/a", 0o755), mkdir("d/b", 0o755), mkdir("d/c", 0o755),
				op("rmdir", "d/a"), rename("d/b", "b"), rename("b", "d/c/b"), link("d", "dl"),
				link("missing", "x"), link("l2", "d"), link("f", "{other}/f"), symlink("f", "s"),
				link("s", "sl"), mknod("p", unix.S_IFIFO|0o644, 0, 0), link("p", "pl"),
				creat("r", 0o644), creat("w", 0o666), creat("su", 0o4777)),
			as(nobody, 0o022, link("r", "nl1"), link("w", "nl2"), link("su", "nl3"), link("d", "nl4")),
		},
		Observe: []string{"f", "l1", "l2", "l3", "d", "d/c", "d/c/b", "s", "sl", "p", "pl", "r", "w", "nl1", "nl2", "nl3"},
	}}
}

// errnoCases: names too long, symbolic link loops, entries that exist,
// directories that are not empty, are directories or are not.
func errnoCases() []Case {
	var cs []Case
	for _, w := range []struct {
		name string
		who  Who
	}{{"root", root}, {"nobody", nobody}} {
		cs = append(cs, Case{
			Name: "errnos/" + w.name,
			Steps: []Step{as(w.who, 0o022,
				creat("f", 0o644), mkdir("d", 0o755), creat("d/x", 0o644), symlink("l2", "l1"), symlink("l1", "l2"),
				symlink("f", "lf"), symlink("nowhere", "dangling"), mkdir("e", 0o755),
				// ENAMETOOLONG
				creat("{long}", 0o644), mkdir("{long}", 0o755), op("stat", "{long}"), op("unlink", "{long}"),
				mknod("{long}", unix.S_IFIFO|0o644, 0, 0), symlink("f", "{long}"), link("f", "{long}"),
				rename("{long}", "x"), creat("e/"+string255, 0o644), op("stat", "e/"+string255),
				// ELOOP
				open("l1", unix.O_RDONLY), open("lf", unix.O_RDONLY|unix.O_NOFOLLOW), op("stat", "l1/x"),
				creat("l1/x", 0o644), open("lf", unix.O_RDONLY), chmod("l1", 0o644),
				// EEXIST
				mkdir("d", 0o755), creat("f", 0o644), symlink("x", "f"), link("f", "d"), mknod("f", unix.S_IFIFO|0o644, 0, 0),
				mkdir("dangling", 0o755), creat("dangling", 0o644), mkdir("lf", 0o755),
				open("dangling", unix.O_CREAT|unix.O_WRONLY), // creates "nowhere"
				// ENOTEMPTY, EISDIR, ENOTDIR, EINVAL, ENOENT
				op("rmdir", "d"), open("d", unix.O_WRONLY), open("d", unix.O_RDWR), op("unlink", "d"),
				open("d", unix.O_CREAT|unix.O_RDONLY), truncate("d", 0),
				creat("f/x", 0o644), op("rmdir", "f"), open("f", unix.O_RDONLY|unix.O_DIRECTORY), op("stat", "f/"),
				mkdir("f/x", 0o755), op("rmdir", "lf"), op("rmdir", "."), op("rmdir", "d/.."), op("rmdir", "missing"),
				op("unlink", "missing"), op("readlink", "f"), op("readlink", "lf"), mkdir("missing/x", 0o755),
				op("rmdir", "e/"), op("unlink", "lf/"),
				// EXDEV
				link("f", "{other}/x"), rename("d", "{other}/d"),
			)},
			Observe: []string{"f", "d", "e", "l1", "lf", "dangling", "nowhere", "e/" + string255},
		})
	}
	return cs
}

// string255 is a name of NAME_MAX bytes.
var string255 = strings.Repeat("n", 255)

// aclCases: default ACLs replace the umask for what is created beneath
// them and are inherited; access ACLs grant and refuse.
func aclCases() []Case {
	return []Case{{
		Name:  "default-acls",
		Needs: "setfacl",
		Steps: []Step{
			as(root, 0, mkdir("a", 0o777), run("setfacl", "-d", "-m", "u::rwx,g::rwx,o::rwx,u:1001:rwx,m::rwx", "a"),
				mkdir("b", 0o777), run("setfacl", "-d", "-m", "u::rwx,g::r-x,o::---", "b")),
			as(nobody, 0o022, creat("a/f", 0o666), mkdir("a/d", 0o777), mknod("a/p", unix.S_IFIFO|0o666, 0, 0),
				creat("a/d/f", 0o640), creat("b/f", 0o666), mkdir("b/d", 0o777)),
			as(nobody, 0o077, creat("a/g", 0o666), mkdir("a/e", 0o755)),
		},
		Observe: []string{"a", "a/f", "a/d", "a/p", "a/d/f", "a/g", "a/e", "b", "b/f", "b/d"},
	}, {
		Name:  "access-acls",
		Needs: "setfacl",
		Steps: []Step{
			as(root, 0, creat("grant", 0o640), run("setfacl", "-m", "u:65534:rw", "grant"),
				creat("deny", 0o666), run("setfacl", "-m", "u:65534:---", "deny"),
				mkdir("dg", 0o755), run("setfacl", "-m", "u:65534:rwx", "dg"),
				creat("g", 0o644), chmod("grant", 0o600)),
			as(nobody, 0o022, op("write", "grant"), open("grant", unix.O_RDONLY), op("write", "deny"),
				open("deny", unix.O_RDONLY), creat("dg/f", 0o644), run("setfacl", "-m", "u:1001:r", "g")),
			as(root, 0, chmod("deny", 0o660)),
		},
		Observe: []string{"grant", "deny", "dg", "dg/f", "g"},
	}}
}
