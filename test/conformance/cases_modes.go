package conformance

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// modeCases: the modes new entries get under each umask, set-id and
// sticky bits asked for at creation, special files, and the group a
// set-group-ID directory passes on to members and non-members.
func modeCases() []Case {
	var cs []Case
	for _, umask := range []int{0o002, 0o022, 0o077} {
		for _, who := range []struct {
			name string
			w    Who
		}{{"root", root}, {"nobody", nobody}} {
			cs = append(cs, Case{
				Name: fmt.Sprintf("create-modes/umask-%03o/%s", umask, who.name),
				Steps: []Step{as(who.w, umask,
					creat("f0666", 0o666), creat("f0777", 0o777), creat("fsuid", 0o4755),
					creat("fsgid", 0o2755), creat("fsticky", 0o1755), creat("fall", 0o7777),
					mkdir("d0777", 0o777), mkdir("dsticky", 0o1777), mkdir("dsgid", 0o2777),
					mkdir("dall", 0o7777),
					mknod("fifo", unix.S_IFIFO|0o666, 0, 0), mknod("reg", unix.S_IFREG|0o4755, 0, 0),
					mknod("sock", unix.S_IFSOCK|0o777, 0, 0),
					mknod("chr", unix.S_IFCHR|0o620, 1, 3), mknod("blk", unix.S_IFBLK|0o660, 7, 200),
				)},
				Observe: []string{"f0666", "f0777", "fsuid", "fsgid", "fsticky", "fall", "d0777",
					"dsticky", "dsgid", "dall", "fifo", "reg", "sock", "chr", "blk"},
			})
		}
	}
	cs = append(cs, Case{
		Name: "setgid-directory",
		Steps: []Step{
			as(root, 0, mkdir("g", 0o2777), chown("g", 0, 4321)),
			as(nobody, 0o022, creat("g/f", 0o2755), creat("g/f2", 0o644), mkdir("g/d", 0o777),
				mknod("g/p", unix.S_IFIFO|0o2644, 0, 0), mkdir("g/d/sub", 0o755)),
			as(member, 0o022, creat("g/m", 0o2755), mkdir("g/md", 0o755)),
			as(root, 0o022, creat("g/r", 0o2755), mkdir("g/rd", 0o700)),
		},
		Observe: []string{"g", "g/f", "g/f2", "g/d", "g/p", "g/d/sub", "g/m", "g/md", "g/r", "g/rd"},
	})
	cs = append(cs, Case{
		Name: "set-id-on-chmod-chown-write",
		Steps: []Step{
			as(root, 0,
				creat("o", 0o644), chown("o", 65534, 4321), // nobody's, group it is not in
				creat("m", 0o644), chown("m", 1002, 4321), // member's
				creat("s", 0o6777), creat("t", 0o6777), creat("u", 0o6755),
				creat("c", 0o6755), creat("cr", 0o4755), mkdir("dsg", 0o2755),
			),
			as(nobody, 0o022, chmod("o", 0o2755), op("write", "s"), truncate("t", 0)),
			as(member, 0o022, chmod("m", 0o2755)),
			as(root, 0, chown("c", 65534, -1), chown("cr", 0, 0), chown("dsg", 65534, 65534),
				op("write", "u")),
		},
		Observe: []string{"o", "m", "s", "t", "u", "c", "cr", "dsg"},
	})
	cs = append(cs, Case{
		Name: "fifos-and-devices",
		Steps: []Step{
			as(root, 0, mknod("p", unix.S_IFIFO|0o666, 0, 0), mknod("c", unix.S_IFCHR|0o666, 1, 3),
				mknod("b", unix.S_IFBLK|0o660, 7, 200),
				open("p", unix.O_RDONLY|unix.O_NONBLOCK), open("p", unix.O_WRONLY|unix.O_NONBLOCK),
				op("write", "c"), open("c", unix.O_RDONLY), mknod("c", unix.S_IFCHR|0o666, 1, 3),
				mknod("p", unix.S_IFIFO|0o666, 0, 0)),
			as(nobody, 0o022, mknod("x", unix.S_IFCHR|0o666, 1, 3), mknod("y", unix.S_IFBLK|0o666, 7, 1),
				mknod("q", unix.S_IFIFO|0o666, 0, 0), op("write", "c"), open("b", unix.O_RDONLY),
				open("p", unix.O_WRONLY|unix.O_NONBLOCK)),
			as(root, 0, link("c", "c2"), link("p", "p2"), op("unlink", "c"), rename("p", "p3")),
		},
		Observe: []string{"p", "c", "b", "x", "y", "q", "c2", "p2", "p3"},
	})
	return cs
}
