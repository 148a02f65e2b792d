package fs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// writer names who is behind a request on n that the kernel sends with
// pid 0 (a flush of a shared mapping): a process that maps n (mapper).
// The /proc scan runs only if a record needs the answer.
func (n *Node) writer() *who {
	dev, ino := n.fs.dev.Load(), n.StableAttr().Ino
	return &who{find: func() uint32 { return mapperWithin(dev, ino) }}
}

// mapperWait bounds how long a request waits for the /proc scan.
// Opening /proc/PID/maps takes locks of that process, and a process can
// hold them while it waits for this very request: one that is exiting
// or exec-ing, say, with a mapping the kernel flushes on the way. Past
// the bound the write is recorded with pid 0, the request is answered,
// the process goes on, and the scan finishes by itself. A scan of a
// few hundred processes takes tens of milliseconds on a slow machine.
const mapperWait = time.Second

// scans limits the scans running at once, so scans stuck behind such
// processes do not pile up; a request finding no slot records pid 0.
var scans = make(chan struct{}, 4)

// mapperWithin is mapper, giving up (0) after mapperWait or when too many
// scans are still running.
func mapperWithin(dev, ino uint64) uint32 {
	select {
	case scans <- struct{}{}:
	default:
		return 0
	}
	found := make(chan uint32, 1)
	go func() {
		defer func() { <-scans }()
		found <- mapper(dev, ino)
	}()
	select {
	case pid := <-found:
		return pid
	case <-time.After(mapperWait):
		return 0
	}
}

// mapper returns a process that has inode ino of the filesystem on
// device dev mapped, from /proc/*/maps, or 0 if none has (it may have
// unmapped the file and exited before the kernel flushed its pages).
// Other than the daemon itself.
func mapper(dev, ino uint64) uint32 {
	if dev == 0 {
		return 0
	}
	want := []byte(fmt.Sprintf(" %02x:%02x %d ", unix.Major(dev), unix.Minor(dev), ino))
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		if maps(pid, want) {
			return uint32(pid)
		}
	}
	return 0
}

// maps reports whether a line of /proc/pid/maps contains want (the
// device and inode fields, space-separated).
func maps(pid int, want []byte) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), want) {
			return true
		}
	}
	return false
}
