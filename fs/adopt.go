package fs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
)

// Writers a crash left behind. When the daemon dies, the kernel ends
// its FUSE connection, but an open file it had given a backing file
// (passthrough.go) keeps reading and writing that backing file: the
// kernel does not route them through the connection. So do shared
// mappings of one. Such a writer holds a descriptor, or a mapping, of a
// mount that is not this daemon's — an earlier mount of the workspace,
// dead or detached — on an inode of the workspace.
//
// A new daemon adopts them (Mount.AdoptWriters, before it serves
// anything): each file they can write joins the live set, under its
// path, and is captured at every boundary while the kernel counts a
// writer of it, as a live file of its own would be. What they wrote
// while no daemon ran was found, before the mount, as a change made
// while cowfs was not running (package rescan).
//
// A descriptor or mapping opened on the backing directory itself (a
// process outside the mount) is not adopted: its writes are changes
// outside the mount, for package rescan to find.

// adopted is a live file a dead mount's passthrough opens may write,
// known by path (the daemon has no node for it).
type adopted struct {
	rel string
	id  uint64 // the inode's identity (filesystem.idOf)
	pid uint32 // a process found writing it: captures are journaled as its
}

// writer is a file a process may write: its path as the process sees
// it, and the process.
type writer struct {
	path string
	pid  uint32
}

// AdoptWriters finds the processes writing, through a mount of the
// workspace that is not this one, files of the workspace, and puts
// those files in the live set. It returns how many it adopted.
func (m *Mount) AdoptWriters() (int, error) {
	fs := m.root.fs
	var own unix.Stat_t
	if err := unix.Stat(m.mountpoint, &own); err != nil {
		return 0, fmt.Errorf("adopt writers: %w", err)
	}
	backingMounts, err := mountsOfDev(fs.rootDev)
	if err != nil {
		return 0, fmt.Errorf("adopt writers: %w", err)
	}
	found := map[uint64]writer{} // by FUSE inode number
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		writableFds(pid, own.Dev, backingMounts, found)
		sharedMaps(pid, own.Dev, fs.rootDev, found)
	}
	n := 0
	for ino, wr := range found {
		rel, ok := relIn(wr.path, m.mountpoint)
		if !ok {
			continue
		}
		fd, err := fs.tree.OpenFd(rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		st, err := backing.Fstat(fd)
		unix.Close(fd)
		if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || fs.idOf(st) != ino {
			continue
		}
		a := adopted{rel: rel, id: ino, pid: wr.pid}
		fs.pass.adopt(a)
		m.forgetCached([]adopted{a})
		n++
	}
	return n, nil
}

// relIn returns path relative to mountpoint, if it is beneath it. A
// descriptor of a detached mount reads as a path from its root.
func relIn(path, mountpoint string) (string, bool) {
	if strings.HasSuffix(path, " (deleted)") {
		return "", false
	}
	rel, err := filepath.Rel(mountpoint, path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		rel = strings.TrimPrefix(path, "/") // a detached mount
	}
	if rel == "" || aside.Private(rel) {
		return "", false
	}
	return rel, true
}

// mountsOfDev returns the ids of the mounts of the filesystem with
// device dev (the backing directory's).
func mountsOfDev(dev uint64) (map[string]bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 2 && fields[2] == want {
			ids[fields[0]] = true
		}
	}
	return ids, sc.Err()
}

// writableFds adds to found the files process pid has open for writing
// through a mount other than this one (device own) and the backing
// filesystem's mounts.
func writableFds(pid int, own uint64, backingMounts map[string]bool, found map[uint64]writer) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range fds {
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
		if err != nil {
			continue
		}
		var flags uint64
		var mnt, ino string
		for _, l := range strings.Split(string(info), "\n") {
			k, v, _ := strings.Cut(l, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "flags":
				flags, _ = strconv.ParseUint(v, 8, 64)
			case "mnt_id":
				mnt = v
			case "ino":
				ino = v
			}
		}
		if flags&syscall.O_ACCMODE == syscall.O_RDONLY || backingMounts[mnt] || ino == "" {
			continue
		}
		path, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(filepath.Join(dir, e.Name()), &st) == nil && st.Dev == own {
			continue // this mount's
		}
		if n, err := strconv.ParseUint(ino, 10, 64); err == nil {
			found[n] = writer{path, uint32(pid)}
		}
	}
}

// sharedMaps adds to found the files process pid maps shared and
// writable, other than through this mount (device own) or from the
// backing filesystem (device rootDev).
func sharedMaps(pid int, own, rootDev uint64, found map[uint64]writer) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 6 || !strings.HasPrefix(fields[1], "rw") || fields[1][3] != 's' {
			continue
		}
		major, minor, ok := strings.Cut(fields[3], ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(major, 16, 32)
		mi, err2 := strconv.ParseUint(minor, 16, 32)
		ino, err3 := strconv.ParseUint(fields[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || ino == 0 {
			continue
		}
		dev := unix.Mkdev(uint32(ma), uint32(mi))
		if dev == own || dev == rootDev {
			continue
		}
		found[ino] = writer{strings.TrimSpace(fields[5]), uint32(pid)}
	}
}

// adopt puts a in the live set.
func (p *passthrough) adopt(a adopted) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.adopted == nil {
		p.adopted = map[uint64]adopted{}
	}
	p.adopted[a.id] = a
}

// captureAdopted is captureLive for the adopted files. It returns those
// it captured: the kernel's caches of them, through this mount, may be
// stale, since they were written through another.
func (p *passthrough) captureAdopted(fs *filesystem, log func(msg string, args ...any)) []adopted {
	var held []adopted
	p.mu.Lock()
	all := make([]adopted, 0, len(p.adopted))
	for _, a := range p.adopted {
		all = append(all, a)
	}
	p.mu.Unlock()
	for _, a := range all {
		fd, err := fs.tree.OpenFd(a.rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		var st *unix.Stat_t
		if err == nil {
			st, err = backing.Fstat(fd)
		}
		if err != nil || fs.idOf(st) != a.id || !writersOf(fd) {
			if err == nil {
				unix.Close(fd)
			}
			p.mu.Lock()
			delete(p.adopted, a.id)
			p.mu.Unlock()
			continue
		}
		err = fs.captureAt(fuse.Caller{Pid: a.pid}, a.rel, a.id, fd)
		unix.Close(fd)
		if err != nil {
			log("cannot capture a file still open for writing at the boundary", "path", a.rel, "err", err)
		}
		held = append(held, a)
	}
	return held
}

// forgetCached tells the kernel to drop what it caches of the adopted
// files: they are written through another mount.
func (m *Mount) forgetCached(as []adopted) {
	if len(as) == 0 {
		return
	}
	for _, a := range as {
		m.Changed(a.rel, a.id, false)
	}
	m.Flush()
}

// captureAt journals the attributes and all the bytes of the file at
// rel (identity id, open as fd) in the current epoch, as a change by
// creator, unless the epoch journaled them already or created it.
func (fs *filesystem) captureAt(creator fuse.Caller, rel string, id uint64, fd int) error {
	c := fs.rec.begin(fuse.NewContext(context.Background(), &creator), nil)
	defer c.end()
	st, err := backing.Fstat(fd)
	if err != nil {
		return err
	}
	if err := fs.saveWhole(c, rel, id, fd, st); err != nil {
		c.fail(err)
		return err
	}
	return nil
}
