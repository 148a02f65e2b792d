package daemon

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Which processes keep a mount busy.
//
// umount(2) fails with EBUSY while a process has its working or root
// directory on the mount, a file open on it, or a file of it mapped.
// `cowfs umount` names those processes instead of waiting for them,
// and must find them without asking the FUSE daemon anything (it may
// be the one that hangs). So everything comes from /proc: an open
// file's mount is in its fdinfo (mnt_id); a working or root directory's
// from statx of the /proc magic link with AT_STATX_DONT_SYNC — the VFS
// fills STATX_MNT_ID itself, and FUSE answers a DONT_SYNC getattr from
// its cache without sending a request; a mapping's filesystem is the
// device in maps. Names come from readlink, which the kernel answers
// from its dentries. Mount ids, not paths, decide: a shell that entered
// the workspace before cowfs was mounted over it sits on the backing
// directory, not on the mount, and does not hold it.

// MountRef is one mount, as the kernel numbers it.
type MountRef struct {
	ID    uint64 // as in /proc/self/mountinfo and STATX_MNT_ID
	Dev   uint64 // the filesystem's device
	Point string
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
	return MountRef{ID: m.ID, Dev: m.Dev, Point: abs}, true
}

// Attached reports whether the mount is still at its point in this
// mount namespace (a lazy unmount detaches it while it stays in use).
func (m MountRef) Attached() bool {
	e, ok := mountAt(m.Point)
	return ok && e.ID == m.ID
}

// Holder is a process that keeps a mount busy.
type Holder struct {
	Pid     int
	Command string   // /proc/PID/comm
	Uses    []string // "working directory /ws/sub", "open file /ws/f", …
}

// maxUses bounds what a Holder lists; the rest are counted.
const maxUses = 4

func (h Holder) String() string {
	return fmt.Sprintf("pid %d (%s): %s", h.Pid, h.Command, strings.Join(h.Uses, "; "))
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
	// The kernel names what lies on a detached mount from the mount's
	// own root: put the mountpoint it had in front.
	name := printable
	if !m.Attached() {
		name = func(p string) string { return printable(m.Point+strings.TrimSuffix(p, "/")) + " (detached)" }
	}
	var out []Holder
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if uses := m.usesOf(pid, name); len(uses) > 0 {
			out = append(out, Holder{Pid: pid, Command: comm(pid), Uses: uses})
		}
	}
	return out
}

// usesOf lists what process pid holds on the mount, naming paths with
// name.
func (m MountRef) usesOf(pid int, name func(string) string) []string {
	proc := "/proc/" + strconv.Itoa(pid)
	var uses []string
	more := 0
	add := func(what, link string) {
		if len(uses) == maxUses {
			more++
			return
		}
		t, err := os.Readlink(link)
		if err != nil {
			t = "?"
		}
		uses = append(uses, what+" "+name(t))
	}
	for _, d := range []struct{ link, what string }{{"cwd", "working directory"}, {"root", "root directory"}} {
		if m.onMount(proc + "/" + d.link) {
			add(d.what, proc+"/"+d.link)
		}
	}
	if fds, err := os.ReadDir(proc + "/fd"); err == nil {
		for _, fd := range fds {
			link := proc + "/fd/" + fd.Name()
			if t, err := os.Readlink(link); err != nil || !strings.HasPrefix(t, "/") {
				continue // a pipe, a socket, an anonymous inode
			}
			if fdMount(proc+"/fdinfo/"+fd.Name()) == m.ID {
				add("open file", link)
			}
		}
	}
	for _, path := range m.mapped(proc + "/maps") {
		if len(uses) == maxUses {
			more++
			continue
		}
		uses = append(uses, "mapping "+name(path))
	}
	if more > 0 {
		uses = append(uses, fmt.Sprintf("and %d more", more))
	}
	return uses
}

// onMount reports whether the directory a /proc magic link names is on
// the mount (see the top of the file for why this never blocks).
func (m MountRef) onMount(link string) bool {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, link, unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &st); err != nil {
		return false
	}
	return st.Mask&unix.STATX_MNT_ID != 0 && st.Mnt_id == m.ID
}

// fdMount returns the mount id an fdinfo file gives, or 0.
func fdMount(fdinfo string) uint64 {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// mapped returns the distinct paths a maps file maps from the mount's
// filesystem.
func (m MountRef) mapped(maps string) []string {
	f, err := os.Open(maps)
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
		if p := strings.Join(fields[5:], " "); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// printable is p, Go-quoted if it holds anything a terminal would not
// show as it is.
func printable(p string) string {
	if !utf8.ValidString(p) {
		return strconv.Quote(p)
	}
	for _, r := range p {
		if !unicode.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}

// comm is a process's command name.
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSuffix(string(b), "\n")
}
