package fs

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// New entries are made with the caller's credentials, as the kernel
// would make them on the backing filesystem for that process: the
// daemon's thread takes the caller's filesystem uid, gid and
// supplementary groups for the one creating call, then its own again.
// So the owner, the group a set-group-ID directory passes on, the
// set-group-ID bit a non-member may not set, and the sticky and
// set-user-ID bits come out as natively, with no chown afterwards
// (which would clear set-id bits, and would act on whatever the name
// holds by then). The mode is the caller's, with its umask applied
// (umask.go); the creating thread's own umask is 0 meanwhile.
//
// setfsuid, setfsgid and setgroups as system calls change only the
// calling thread, which is locked to the goroutine meanwhile.

// caller is who a creating request comes from.
type caller struct {
	uid, gid uint32
	tid      uint32 // the calling thread, for its supplementary groups
}

// asCaller runs fn with the thread's filesystem credentials set to c's.
// Root with group 0 needs no change.
func asCaller(c caller, fn func() error) error {
	if c.uid == 0 && c.gid == 0 {
		return fn()
	}
	groups := groupsOf(c.tid, c.gid)
	runtime.LockOSThread()
	if err := unix.Setgroups(groups); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("take the caller's groups: %w", err)
	}
	unix.Setfsgid(int(c.gid))
	unix.Setfsuid(int(c.uid))
	err := fn()
	unix.Setfsuid(os.Geteuid())
	unix.Setfsgid(os.Getegid())
	if rerr := unix.Setgroups(ownGroups); rerr != nil || !ownCreds() {
		// Never hand a thread with someone else's credentials back to
		// the scheduler: it stays locked to this goroutine, and exits
		// with it.
		return fmt.Errorf("restore the daemon's credentials: %v", rerr)
	}
	runtime.UnlockOSThread()
	return err
}

// ownGroups are the daemon's own supplementary groups.
var ownGroups, _ = unix.Getgroups()

// ownCreds checks that the thread's filesystem ids are the daemon's
// again (setfsuid reports the previous value, not failure).
func ownCreds() bool {
	uid, _ := unix.SetfsuidRetUid(-1)
	gid, _ := unix.SetfsgidRetGid(-1)
	return uid == os.Geteuid() && gid == os.Getegid()
}

// groupsOf returns the supplementary groups of thread tid (the kernel
// checks them when a set-group-ID directory or file is involved), or
// just gid if they cannot be read.
func groupsOf(tid, gid uint32) []int {
	if tid == 0 {
		return []int{int(gid)}
	}
	now := time.Now()
	groupCache.Lock()
	e, ok := groupCache.m[tid]
	groupCache.Unlock()
	if ok && now.Sub(e.at) < processTTL {
		return e.groups
	}
	groups := readGroups(tid)
	if groups == nil {
		groups = []int{int(gid)}
	}
	groupCache.Lock()
	if len(groupCache.m) > maxCachedThreads {
		groupCache.m = map[uint32]groupEntry{}
	}
	groupCache.m[tid] = groupEntry{groups, now}
	groupCache.Unlock()
	return groups
}

var groupCache = struct {
	sync.Mutex
	m map[uint32]groupEntry
}{m: map[uint32]groupEntry{}}

type groupEntry struct {
	groups []int
	at     time.Time
}

// readGroups reads the Groups line of /proc/TID/status.
func readGroups(tid uint32) []int {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "Groups:")
		if !ok {
			continue
		}
		groups := []int{}
		for _, f := range strings.Fields(v) {
			if g, err := strconv.Atoi(f); err == nil {
				groups = append(groups, g)
			}
		}
		return groups
	}
	return nil
}

// inGroup reports whether caller c is a member of group gid (its
// filesystem gid or a supplementary group).
func (c caller) inGroup(gid uint32) bool {
	if c.gid == gid {
		return true
	}
	for _, g := range groupsOf(c.tid, c.gid) {
		if uint32(g) == gid {
			return true
		}
	}
	return false
}
