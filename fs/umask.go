package fs

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"
)

// The mode of a new entry is decided as on the backing filesystem, where
// a directory's default ACL, if it has one, takes the place of the
// creating process's umask. The mount asks the kernel for POSIX ACL
// support (Mount: EnableAcl), so the kernel checks access ACLs as the
// backing filesystem would and sends CREATE, MKDIR, MKNOD and TMPFILE
// with the mode unmasked and the caller's umask alongside. go-fuse's
// node API drops the umask, so umaskFS, in front of it, notes each
// request's umask under its calling thread (a thread makes one system
// call at a time) for createMode to find.
//
// Where the kernel applied the umask itself (no ACL support negotiated)
// applying it again changes nothing.
//
// # The daemon's own umask
//
// The backing filesystem applies the creating process's umask too, to
// the mode createMode decided, so the creating call must run with
// umask 0. The process's umask is left alone: the daemon's own files
// (journal, socket, state directories, and the files Badger creates)
// get the modes their code asks for under the umask it was started
// with. Instead the one thread that makes the call (unmasked) stops
// sharing its umask, working directory and root with the others
// (unshare(CLONE_FS): per thread, as setfsuid is in creds.go), sets its
// umask to 0 for the call, and back after. Only that thread, locked to
// the goroutine meanwhile, ever has umask 0; the runtime starts no
// thread from a locked one, so none shares it at that moment. Once
// back in the runtime's pool, the thread differs from the others only
// in not seeing a later change of the process's working directory,
// root or umask, which the daemon never makes (cowfs changes its
// directory only in commands that serve no mount).

// umaskFS notes the umask of creating requests while they are served.
type umaskFS struct {
	fuse.RawFileSystem
	umasks *umasks
}

func (u umaskFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	defer u.umasks.note(in.Pid, in.Umask)()
	return u.RawFileSystem.Create(cancel, in, name, out)
}

func (u umaskFS) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	defer u.umasks.note(in.Pid, in.Umask)()
	return u.RawFileSystem.Tmpfile(cancel, in, out)
}

func (u umaskFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	defer u.umasks.note(in.Pid, in.Umask)()
	return u.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (u umaskFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	defer u.umasks.note(in.Pid, in.Umask)()
	return u.RawFileSystem.Mknod(cancel, in, name, out)
}

// umasks maps calling threads to the umask of their creating request.
// A thread makes one system call at a time, but requests the kernel
// cannot name a thread for come with pid 0: while several of those are
// in flight, each gets the union of their umasks, never more
// permissive than its own.
type umasks struct {
	mu sync.Mutex
	m  map[uint32]umaskEntry
}

type umaskEntry struct {
	mask uint32
	n    int // requests in flight
}

// note records tid's umask and returns the function that forgets it.
func (u *umasks) note(tid, umask uint32) func() {
	u.mu.Lock()
	if u.m == nil {
		u.m = map[uint32]umaskEntry{}
	}
	e := u.m[tid]
	u.m[tid] = umaskEntry{e.mask | umask, e.n + 1}
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		if e := u.m[tid]; e.n > 1 {
			u.m[tid] = umaskEntry{e.mask, e.n - 1}
		} else {
			delete(u.m, tid)
		}
		u.mu.Unlock()
	}
}

// of returns the umask of tid's creating request; a request that did
// not pass umaskFS (none should) gets the common 022.
func (u *umasks) of(tid uint32) uint32 {
	u.mu.Lock()
	defer u.mu.Unlock()
	if e, ok := u.m[tid]; ok {
		return e.mask
	}
	return 0o022
}

// createMode is the mode to create an entry with in directory dir (a
// descriptor) for caller c who asked for mode: without the caller's
// umask, unless dir has a default ACL, which the backing filesystem
// applies instead.
func (fs *filesystem) createMode(c caller, dir int, mode uint32) uint32 {
	umask := fs.umasks.of(c.tid)
	if mode&umask == 0 {
		return mode // nothing to take away
	}
	// dir may be an O_PATH descriptor, which fgetxattr refuses.
	_, err := unix.Getxattr("/proc/self/fd/"+strconv.Itoa(dir), "system.posix_acl_default", nil)
	if err == nil {
		return mode
	}
	return mode &^ umask // ENODATA; any other error errs on the safe side
}

// unmasked runs fn, a call that creates an entry with permission bits
// perm (createMode decided them), with the calling thread's umask 0 (see
// the package doc above) — unless the daemon's umask takes none of
// perm's bits away: then it changes nothing, and fn runs as it is
// (where a default ACL applies, the backing filesystem ignores any
// umask). Most modes pass so (0644, 0755, 0600 under umask 022),
// which saves a creation three system calls.
func unmasked(perm uint32, fn func() error) error {
	if perm&0o777&ownUmask.Load() == 0 {
		return fn()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// A no-op once the thread's filesystem context is its own, unless
	// a thread the runtime started from this one shares it since.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("a umask of the creating thread's own: unshare: %v", err) // not the caller's errno
	}
	defer unix.Umask(unix.Umask(0))
	return fn()
}

// ownUmask is the process's umask, read when a mount starts (it is
// never changed while one serves: see above); 0777 until then, or if it
// cannot be read, so that every creation takes its thread's umask to 0.
var ownUmask atomic.Uint32

func init() { ownUmask.Store(0o777) }

// noteOwnUmask reads the umask from the calling thread's status (Linux
// 4.7 on), which, unlike umask(2), does not set it meanwhile. The
// thread shares it with every other that has not unshared its own
// (unmasked), and those have a copy of it.
func noteOwnUmask() {
	mask := uint32(0o777)
	if b, err := os.ReadFile("/proc/thread-self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					mask = uint32(m) & 0o777
				}
			}
		}
	}
	ownUmask.Store(mask)
}
