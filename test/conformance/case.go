package conformance

import "golang.org/x/sys/unix"

// Case is one conformance case: steps run in order in a fresh directory
// (mode 0777, owned by root), then the paths in Observe are described.
type Case struct {
	Name    string
	Steps   []Step
	Observe []string
	// Needs names a program the case runs (it is skipped without it).
	Needs string
}

// as makes a step of ops run by who with umask.
func as(who Who, umask int, ops ...Op) Step { return Step{As: who, Umask: umask, Ops: ops} }

func op(call, p string) Op { return Op{Call: call, Path: p, Uid: -1, Gid: -1} }

func creat(p string, mode uint32) Op {
	o := op("open", p)
	o.Flags, o.Mode = unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, mode
	return o
}

func open(p string, flags int) Op {
	o := op("open", p)
	o.Flags, o.Mode = flags, 0o644
	return o
}

func mkdir(p string, mode uint32) Op {
	o := op("mkdir", p)
	o.Mode = mode
	return o
}

func mknod(p string, mode uint32, major, minor uint32) Op {
	o := op("mknod", p)
	o.Mode, o.Dev = mode, unix.Mkdev(major, minor)
	return o
}

func chmod(p string, mode uint32) Op {
	o := op("chmod", p)
	o.Mode = mode
	return o
}

func chown(p string, uid, gid int) Op {
	o := op("chown", p)
	o.Uid, o.Gid = uid, gid
	return o
}

func truncate(p string, size uint32) Op {
	o := op("truncate", p)
	o.Mode = size
	return o
}

func two(call, p, p2 string) Op {
	o := op(call, p)
	o.Path2 = p2
	return o
}

func rename(p, p2 string) Op { return two("rename", p, p2) }

func renameFlags(p, p2 string, flags int) Op {
	o := two("rename", p, p2)
	o.Flags = flags
	return o
}

func link(p, p2 string) Op        { return two("link", p, p2) }
func symlink(target, p string) Op { return two("symlink", target, p) }

func run(args ...string) Op {
	o := op("exec", "")
	o.Args = args
	return o
}

// Cases returns every case.
func Cases() []Case {
	var cs []Case
	cs = append(cs, modeCases()...)
	cs = append(cs, permissionCases()...)
	cs = append(cs, renameCases()...)
	cs = append(cs, linkCases()...)
	cs = append(cs, errnoCases()...)
	cs = append(cs, aclCases()...)
	cs = append(cs, moreCases()...)
	cs = append(cs, flagCases()...)
	return cs
}
