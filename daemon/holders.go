package daemon

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Which processes keep a mount busy.
//
// umount(2) fails with EBUSY while a process has its working or root
// directory on the mount, a file open on it, or a file of it mapped.
// `cowfs umount` names those processes instead of waiting for them,
// and must find them without asking the FUSE daemon anything (it may
// be the one that hangs). So everything comes from /proc, and the
// mount each of those is on from statx of the /proc magic link with
// AT_STATX_DONT_SYNC: the VFS fills in the mount id itself, and FUSE
// answers a DONT_SYNC getattr from its cache without sending a request.
// Names come from readlink, which the kernel answers from its dentries.
//
// Mount ids, not paths, decide: a shell that entered the workspace
// before cowfs was mounted over it sits on the backing directory, not
// on the mount, and does not hold it. The unique 64-bit id
// (STATX_MNT_ID_UNIQUE, Linux 6.8) is never given to another mount;
// the older one, and a FUSE filesystem's device number, are reused as
// soon as the mount is gone — on a machine where other cowfs mounts
// come and go, a process on one of those would be taken for a holder
// of a mount unmounted a moment ago.

// MountRef is one mount, as the kernel numbers it.
type MountRef struct {
	ID     uint64 // STATX_MNT_ID_UNIQUE, or (unique false) STATX_MNT_ID
	unique bool
	Dev    uint64 // the filesystem's device
	Point  string
}

// CowfsMount returns the cowfs mount at path (the topmost mount there),
// if there is one.
func CowfsMount(path string) (MountRef, bool) {
	abs, err := canonical(path)
	if err != nil {
		return MountRef{}, false
	}
	m, ok := mountAt(abs)
	if !ok || m.FSType != "fuse.cowfs" {
		return MountRef{}, false
	}
	ref := MountRef{ID: m.ID, Dev: m.Dev, Point: abs}
	if id, ok := mountID(abs, true); ok {
		ref.ID, ref.unique = id, true
	}
	return ref, true
}

// mountID returns the id of the mount path (followed, if a /proc magic
// link) is on: the unique one, or the reusable one.
func mountID(path string, unique bool) (uint64, bool) {
	mask := unix.STATX_MNT_ID
	if unique {
		mask = unix.STATX_MNT_ID_UNIQUE
	}
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_STATX_DONT_SYNC, mask, &st); err != nil {
		return 0, false
	}
	return st.Mnt_id, st.Mask&uint32(mask) != 0
}

// on reports whether path is on the mount.
func (m MountRef) on(path string) bool {
	id, ok := mountID(path, m.unique)
	return ok && id == m.ID
}

// Attached reports whether the mount is still at its point in this
// mount namespace (a lazy unmount detaches it while it stays in use).
func (m MountRef) Attached() bool {
	if m.unique {
		return m.on(m.Point)
	}
	e, ok := mountAt(m.Point)
	return ok && e.ID == m.ID
}

// Holder is a process that keeps a mount busy. Its command and paths
// are as the kernel gives them: escape them before they reach a
// terminal.
type Holder struct {
	Pid     int
	Command string // /proc/PID/comm
	Uses    []Use
	More    int // uses beyond those listed
}

// Use is one way a process holds a mount.
type Use struct {
	What string // "working directory", "root directory", "open file", "mapping"
	Path string // where, in the mount; "(detached)" follows if it is
}

// maxUses bounds what a Holder lists; the rest are counted.
const maxUses = 4

// String is the holder for a log line (whose handler quotes it).
func (h Holder) String() string {
	var uses []string
	for _, u := range h.Uses {
		uses = append(uses, u.What+" "+u.Path)
	}
	if h.More > 0 {
		uses = append(uses, fmt.Sprintf("and %d more", h.More))
	}
	return fmt.Sprintf("pid %d (%s): %s", h.Pid, h.Command, strings.Join(uses, "; "))
}

// Holders returns the processes other than this one that use the
// mount, by pid. Processes this one may not inspect (another user's,
// for a non-root caller) are left out.
func (m MountRef) Holders() []Holder {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	attached := m.Attached()
	// The kernel names what lies on a detached mount from the mount's
	// own root: put the mountpoint it had in front.
	name := func(p string) string { return p }
	if !attached {
		name = func(p string) string { return m.Point + strings.TrimSuffix(p, "/") + " (detached)" }
	}
	var out []Holder
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if h := m.usesOf(pid, attached, name); len(h.Uses) > 0 {
			h.Pid, h.Command = pid, comm(pid)
			out = append(out, h)
		}
	}
	return out
}

// usesOf lists what process pid holds on the mount, naming paths with
// name.
func (m MountRef) usesOf(pid int, attached bool, name func(string) string) Holder {
	proc := "/proc/" + strconv.Itoa(pid)
	var h Holder
	add := func(what, path string) {
		if len(h.Uses) == maxUses {
			h.More++
			return
		}
		h.Uses = append(h.Uses, Use{What: what, Path: name(path)})
	}
	for _, d := range []struct{ link, what string }{{"cwd", "working directory"}, {"root", "root directory"}} {
		if link := proc + "/" + d.link; m.on(link) {
			t, err := os.Readlink(link)
			if err != nil {
				t = "?"
			}
			add(d.what, t)
		}
	}
	if fds, err := os.ReadDir(proc + "/fd"); err == nil {
		for _, fd := range fds {
			link := proc + "/fd/" + fd.Name()
			t, err := os.Readlink(link)
			if err != nil || !strings.HasPrefix(t, "/") {
				continue // a pipe, a socket, an anonymous inode
			}
			if m.on(link) {
				add("open file", t)
			}
		}
	}
	for _, path := range m.mapped(proc, attached) {
		add("mapping", path)
	}
	return h
}

// mapped returns the distinct paths process proc maps from the mount.
// maps gives each mapping's device; map_files (root only) leads to the
// file itself, whose mount id tells. Without map_files the device
// decides, while the mount is attached: no other filesystem can have
// its device then.
func (m MountRef) mapped(proc string, attached bool) []string {
	f, err := os.Open(proc + "/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset major:minor inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		maj, min, ok := strings.Cut(fields[3], ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 16, 32)
		mi, err2 := strconv.ParseUint(min, 16, 32)
		if err1 != nil || err2 != nil || unix.Mkdev(uint32(ma), uint32(mi)) != m.Dev {
			continue
		}
		p := strings.Join(fields[5:], " ")
		if seen[p] {
			continue
		}
		if id, ok := mountID(proc+"/map_files/"+fields[0], m.unique); ok {
			if id != m.ID {
				continue
			}
		} else if !attached {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// comm is a process's command name.
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSuffix(string(b), "\n")
}
