package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/fs"
	"github.com/cowfs/cowfs/journal"
)

// Errors a mount can fail with before anything is mounted.
var (
	ErrNoWorkspace    = errors.New("does not exist") // the workspace or the mountpoint
	ErrAlreadyMounted = errors.New("workspace is already mounted by a live cowfs")
)

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	ID     uint64 // the mount's id, as statx's STATX_MNT_ID gives it
	Dev    uint64 // its filesystem's device
	Point  string
	FSType string
	Source string
}

// mountAt returns the topmost mount at path, if any.
func mountAt(path string) (mountEntry, bool) {
	var found mountEntry
	ok := false
	eachMount(func(m mountEntry) {
		if m.Point == path {
			found, ok = m, true
		}
	})
	return found, ok
}

// isMountPoint reports whether something is mounted at path.
func isMountPoint(path string) bool {
	_, ok := mountAt(path)
	return ok
}

// eachMount calls fn with each line of /proc/self/mountinfo, in order
// (a mount comes after those it covers).
func eachMount(fn func(mountEntry)) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		m := mountEntry{Point: unescape(fields[4]), FSType: fields[sep+1], Source: unescape(fields[sep+2])}
		m.ID, _ = strconv.ParseUint(fields[0], 10, 64)
		if maj, min, ok := strings.Cut(fields[2], ":"); ok {
			ma, _ := strconv.ParseUint(maj, 10, 32)
			mi, _ := strconv.ParseUint(min, 10, 32)
			m.Dev = unix.Mkdev(uint32(ma), uint32(mi))
		}
		fn(m)
	}
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// clearStale unmounts a FUSE mount at path whose daemon died (the kernel
// answers ENOTCONN), saying so. It reports whether it cleared one.
//
// It asks with statfs, which the kernel always passes to the daemon: a
// stat could be answered from the kernel's attribute cache. A daemon
// that hangs rather than died would make statfs wait forever, so it is
// given a few seconds.
func clearStale(path string, log *slog.Logger) (bool, error) {
	done := make(chan error, 1)
	go func() {
		var st syscall.Statfs_t
		done <- syscall.Statfs(path, &st)
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Second):
		return false, fmt.Errorf("the filesystem at %s does not answer; its daemon hangs (umount -l %s, or write 1 to /sys/fs/fuse/connections/*/abort)", path, path)
	}
	if !errors.Is(err, syscall.ENOTCONN) {
		return false, nil
	}
	if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil {
		return false, fmt.Errorf("clear stale mount at %s: %w", path, err)
	}
	log.Warn("cleared a stale mount left by a cowfs daemon that died", "path", path)
	return true, nil
}

// checkDir checks that path is an existing directory.
func checkDir(path, what string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s %s %w", what, path, ErrNoWorkspace)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s is not a directory", what, path)
	}
	return nil
}

// Errors of the packages beneath, for the CLI's exit codes (it imports
// only daemon and ctl).
var (
	ErrNoFUSE        = fs.ErrNoFUSE
	ErrNotPermitted  = fs.ErrNotPermitted
	ErrJournalLocked = journal.ErrLocked
)

// DefaultCacheTimeout is how long the kernel caches by default.
const DefaultCacheTimeout = fs.DefaultCacheTimeout

// DefaultMaxNodes is how many nodes the kernel keeps known by default.
const DefaultMaxNodes = fs.DefaultMaxNodes
