package journal

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Badger reads its tables through memory mappings, and the pages of
// them that a scan or a lookup touched stay in the daemon's resident
// set for as long as the table lives: a large rollback kept tens of
// MiB of them, as much as the daemon's whole heap. They are the
// kernel's page cache, mapped; the resident set is what the daemon is
// held to (128 MiB), so the journal keeps them in check: every 250 ms,
// and every trimScanEvery records a long scan reads, it looks at how
// much of the process is file-backed (statm), and if Badger's mappings
// hold more than mappedBudget it asks the kernel to reclaim their pages
// (MADV_PAGEOUT). The data stays on disk, and a
// table page read again is read back.
//
// Why PAGEOUT and not DONTNEED: the mappings are Badger's, found by
// name in /proc/self/smaps, and one may be unmapped — its range then
// reused by another mapping — between the reading and the call.
// PAGEOUT on a file mapping only drops pages from memory, and on
// anonymous memory at most swaps it out: whatever the range holds by
// then, nothing is lost. DONTNEED would zero anonymous memory.

const (
	mappedBudget  = 16 << 20
	trimEvery     = 250 * time.Millisecond
	trimScanEvery = 8192 // records a Scan reads between trims
)

// trimmer runs trimMapped every trimEvery until stop is closed.
func (j *Journal) trimmer(stop <-chan struct{}) {
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			j.trimMapped()
		}
	}
}

// trimMapped pages out Badger's mapped files if they keep more than
// mappedBudget resident.
func (j *Journal) trimMapped() {
	if shared, ok := sharedBytes(); !ok || shared < mappedBudget {
		return // not even everything file-backed together is over
	}
	maps := badgerMappings(filepath.Join(j.dir, "badger"))
	var total int64
	for _, m := range maps {
		total += m.rss
	}
	if total <= mappedBudget {
		return
	}
	sort.Slice(maps, func(a, b int) bool { return maps[a].rss > maps[b].rss })
	for _, m := range maps {
		unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT)
		if total -= m.rss; total <= mappedBudget/2 {
			break
		}
	}
}

// sharedBytes is the process's file-backed resident memory (statm).
func sharedBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[2], 10, 64)
	return pages * int64(os.Getpagesize()), err == nil
}

// mapping is one of Badger's file mappings and the bytes of it
// resident.
type mapping struct {
	start, end uintptr
	rss        int64
}

// badgerMappings lists the mappings of tables and value-log files in
// dir (not the memtables' logs, written all the time).
func badgerMappings(dir string) []mapping {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mapping
	var cur *mapping
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := []byte(dir + "/")
	for s.Scan() {
		line := s.Bytes()
		if i := bytes.IndexByte(line, ' '); i > 0 && bytes.IndexByte(line[:i], '-') > 0 && !bytes.HasSuffix(line[:i], []byte(":")) {
			// A mapping's header: "start-end perms offset dev inode path".
			cur = nil
			p := bytes.Index(line, prefix)
			if p < 0 || !(bytes.HasSuffix(line, []byte(".sst")) || bytes.HasSuffix(line, []byte(".vlog"))) {
				continue
			}
			r := bytes.SplitN(line[:i], []byte("-"), 2)
			start, err1 := strconv.ParseUint(string(r[0]), 16, 64)
			end, err2 := strconv.ParseUint(string(r[1]), 16, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			out = append(out, mapping{start: uintptr(start), end: uintptr(end)})
			cur = &out[len(out)-1]
			continue
		}
		if cur != nil && bytes.HasPrefix(line, []byte("Rss:")) {
			if kb, err := strconv.ParseInt(string(bytes.Fields(line)[1]), 10, 64); err == nil {
				cur.rss = kb << 10
			}
		}
	}
	return out
}
