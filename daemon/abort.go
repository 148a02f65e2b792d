package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// # Detaching a daemon that hangs
//
// A daemon that is stopped (SIGSTOP, a debugger) or stuck answers no
// FUSE request and no control request: an unmount that asks it waits
// for ever, and so does every process that touches the mount. The
// kernel can cut the FUSE connection itself: writing to
// /sys/fs/fuse/connections/N/abort (fusectl, N the minor number of the
// mount's device, which /proc/self/mountinfo gives without asking the
// filesystem anything) fails every request waiting on the daemon and
// every one after with ENOTCONN. The mount is then detached as a stale
// one is. The daemon's process is left alone — it still holds the
// journal until it exits — and named, from the pid its journal's lock
// holds, for whoever decides to end it: a daemon that goes on finds its
// connection gone, closes the journal and exits as after an unmount.

// fuseConnections is where fusectl is mounted.
const fuseConnections = "/sys/fs/fuse/connections"

// Aborted says what Abort did.
type Aborted struct {
	Mountpoint string // the mount detached
	Connection uint32 // its FUSE connection, aborted
	Pid        int    // the daemon the journal's lock names, 0 if none
}

// Abort aborts the FUSE connection of the cowfs mount of the workspace
// at path and detaches the mount, asking its daemon nothing. The mount
// is found in this mount namespace: not cowfs run's, which is private.
func Abort(path string) (Aborted, error) {
	abs, err := canonical(path)
	if err != nil {
		return Aborted{}, err
	}
	m, ok := cowfsMountOf(abs)
	if !ok {
		return Aborted{}, fmt.Errorf("no cowfs mount of %s is in this mount namespace: nothing to abort", abs)
	}
	a := Aborted{Mountpoint: m.Point, Connection: unix.Minor(m.Dev)}
	if loc, err := Locate(abs); err == nil {
		a.Pid = journalHolder(loc)
	}
	if err := abortConnection(a.Connection); err != nil {
		return a, err
	}
	if err := unix.Unmount(m.Point, unix.MNT_DETACH); err != nil {
		return a, fmt.Errorf("aborted the FUSE connection of %s, but could not detach it: %w", m.Point, err)
	}
	return a, nil
}

// cowfsMountOf returns the cowfs mount of the workspace ws: the one over
// it, else the topmost one whose source is ws (a daemon names its mount
// after its workspace), which --mountpoint put elsewhere.
func cowfsMountOf(ws string) (mountEntry, bool) {
	if m, ok := mountAt(ws); ok && m.FSType == "fuse.cowfs" {
		return m, true
	}
	var found mountEntry
	ok := false
	eachMount(func(m mountEntry) {
		if m.FSType == "fuse.cowfs" && m.Source == ws {
			found, ok = m, true
		}
	})
	return found, ok
}

// abortConnection aborts FUSE connection n, mounting fusectl for it if
// it is not mounted (and unmounting it afterwards: the system is left
// as it was found).
func abortConnection(n uint32) error {
	p := filepath.Join(fuseConnections, strconv.FormatUint(uint64(n), 10), "abort")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		if err := unix.Mount("fusectl", fuseConnections, "fusectl", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount fusectl on %s to abort FUSE connection %d: %w", fuseConnections, n, err)
		}
		defer unix.Unmount(fuseConnections, 0)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("abort FUSE connection %d: %w", n, err)
	}
	defer f.Close()
	if _, err := f.WriteString("1"); err != nil {
		return fmt.Errorf("abort FUSE connection %d: %w", n, err)
	}
	return nil
}

// journalHolder returns the pid the lock of the workspace's journal
// names, if that process is alive, else 0. It only reads: taking the
// lock to test it could make a daemon starting meanwhile fail.
func journalHolder(loc Location) int {
	jdir, ok := recordedJournal(loc)
	if !ok {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(jdir, "lock"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || Exited(pid) {
		return 0
	}
	return pid
}
