package fs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"golang.org/x/sys/unix"
)

// writer names who is behind a request on n that the kernel sends with
// pid 0 (a flush of a shared mapping): a process that maps n (mapper).
// The /proc scan runs only if a record needs the answer.
func (n *Node) writer() *who {
	dev, ino := n.fs.dev.Load(), n.StableAttr().Ino
	return &who{find: func() uint32 { return mapperWithin(dev, ino, n.caller.Load()) }}
}

// saw notes a request on n (lookup, stat, read): n is used, for the
// trimmer (trim.go), and the thread behind it is the first candidate for
// its mapper — a process maps a file it has just opened, and opening it
// stats it. Two atomic loads on the hot path; a store only when
// something changes.
func (n *Node) saw(ctx context.Context) {
	if !n.used.Load() {
		n.used.Store(true)
	}
	if fc, ok := fuse.FromContext(ctx); ok && fc.Pid != 0 && n.caller.Load() != fc.Pid {
		n.caller.Store(fc.Pid)
	}
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

// mapperWithin is the mapper of inode ino on device dev (scanMaps),
// giving up (0) after mapperWait or when too many scans are still
// running.
func mapperWithin(dev, ino uint64, hint uint32) uint32 {
	select {
	case scans <- struct{}{}:
	default:
		return 0
	}
	found := make(chan uint32, 1)
	go func() {
		defer func() { <-scans }()
		scanMaps(dev, ino, hint, found)
	}()
	select {
	case pid := <-found:
		return pid
	case <-time.After(mapperWait):
		return 0
	}
}

// scanMaps sends on found, once, a process that has inode ino of the
// filesystem on device dev mapped, from /proc/*/maps, or 0 if none has
// (it may have unmapped the file and exited before the kernel flushed
// its pages), other than the daemon itself. It returns when every read
// of a maps file it started has returned, which can be long after it
// sent.
//
// The hint (the thread that last looked up, stat'ed or read the file:
// Node.saw) is asked first. Then every process is, scanWorkers at once:
// reading a process's maps waits for its memory-map lock, which a
// process stuck in a page fault on some FUSE mount — any mount, not
// only this one — holds for as long as that mount's daemon takes. Asked
// one by one, one such process would hold up the answer past
// mapperWait for every process after it.
func scanMaps(dev, ino uint64, hint uint32, found chan<- uint32) {
	if dev == 0 {
		found <- 0
		return
	}
	want := []byte(fmt.Sprintf(" %02x:%02x %d ", unix.Major(dev), unix.Minor(dev), ino))
	if hint != 0 && maps(int(hint), want) {
		found <- hint
		return
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		found <- 0
		return
	}
	self := os.Getpid()
	var hit atomic.Bool
	pids := make(chan int)
	var readers sync.WaitGroup
	for range scanWorkers {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for pid := range pids {
				if !hit.Load() && maps(pid, want) && hit.CompareAndSwap(false, true) {
					found <- uint32(pid)
				}
			}
		}()
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self || pid == int(hint) {
			continue
		}
		if hit.Load() {
			break
		}
		pids <- pid
	}
	close(pids)
	readers.Wait()
	if !hit.Load() {
		found <- 0
	}
}

// scanWorkers is how many processes' maps scanMaps reads at once.
const scanWorkers = 8

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
