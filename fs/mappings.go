package fs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// FlushMappedWriteback is FlushWriteback that also waits for every file
// of the mount a process maps shared at this moment, found in
// /proc/PID/maps: a file mapped and written to for the first time since
// the last flush too. A rollback calls it before it plans, so that every
// write made through a mapping before it began is journaled first (a
// conflict), never refused after the restore (rewritten.go). It costs a
// read of every process's maps, which a turn boundary does not pay.
//
// Reading a process's maps (or opening its map_files) waits for its
// memory-map lock, which a process stuck in a page fault on another FUSE
// mount holds as long as that mount's daemon takes; so the search gives
// up after mapperWait, and a file it did not reach is left to
// rewritten.go. The caller must not hold the journal's gate.
func (m *Mount) FlushMappedWriteback() error {
	err := m.FlushWriteback()
	dev := m.root.fs.dev.Load()
	if dev == 0 {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		syncShared(dev)
	}()
	select {
	case <-done:
	case <-time.After(mapperWait):
		m.root.fs.rec.log.Warn("gave up waiting for the writeback of every mapped file; a late write through a mapping may be refused", "after", mapperWait)
	}
	return err
}

// syncShared writes back and waits for each file on device dev that a
// process maps shared, through /proc/PID/map_files (which opens the
// mapped file itself, wherever its names went).
func syncShared(dev uint64) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	want := []byte(fmt.Sprintf(" %02x:%02x ", unix.Major(dev), unix.Minor(dev)))
	self := os.Getpid()
	var mu sync.Mutex
	seen := map[uint64]bool{} // inodes synced or being synced
	pids := make(chan int)
	var workers sync.WaitGroup
	for range scanWorkers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for pid := range pids {
				for _, s := range sharedOn(pid, want) {
					mu.Lock()
					done := seen[s.ino]
					mu.Unlock()
					if !done && syncMapped(pid, s.addrs, dev, s.ino) {
						mu.Lock()
						seen[s.ino] = true
						mu.Unlock()
					}
				}
			}
		}()
	}
	for _, p := range procs {
		if pid, err := strconv.Atoi(p.Name()); err == nil && pid != self {
			pids <- pid
		}
	}
	close(pids)
	workers.Wait()
}

// sharedMapping is one shared mapping of a file: its address range as
// maps writes it, and the file's inode.
type sharedMapping struct {
	addrs string
	ino   uint64
}

// sharedOn returns the shared mappings of process pid of files whose
// maps lines contain want (the device field, space-separated).
func sharedOn(pid int, want []byte) []sharedMapping {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []sharedMapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, want) {
			continue
		}
		// addresses perms offset dev inode [path]
		fields := bytes.Fields(line)
		if len(fields) < 5 || len(fields[1]) < 4 || fields[1][3] != 's' {
			continue
		}
		ino, err := strconv.ParseUint(string(fields[4]), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, sharedMapping{addrs: string(fields[0]), ino: ino})
	}
	return out
}

// syncMapped writes back and waits for the file process pid maps at
// addrs, if it is still inode ino of device dev, and reports whether it
// could.
func syncMapped(pid int, addrs string, dev, ino uint64) bool {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/map_files/"+addrs, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return false // unmapped, or exited, since
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Dev != dev || st.Ino != ino {
		return false
	}
	const all = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	// An error is a writeback that failed: the writer's to learn (see
	// waitWriteback); the pages are not dirty any more.
	unix.SyncFileRange(fd, 0, 0, all)
	return true
}
