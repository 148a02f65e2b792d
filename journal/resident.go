package journal

import (
	"bytes"
	"encoding/binary"
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
// Badger's mappings are found by name in /proc/self/maps and their
// resident pages counted in /proc/self/pagemap, for their ranges only.
// Not /proc/self/smaps: it walks the page tables of every mapping, the
// Go heap's too, and the daemon's own file-backed pages (its text, the
// memtables' logs) keep statm over the budget, so it would be read at
// every tick, idle or busy, at a cost that grows with the heap.
//
// Why PAGEOUT and not DONTNEED: a mapping may be unmapped — its range
// then reused by another mapping — between the reading and the call.
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
// dir (not the memtables' logs, written all the time), with the bytes
// of each that are resident.
func badgerMappings(dir string) []mapping {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	var out []mapping
	prefix := []byte(dir + "/")
	for _, line := range bytes.Split(b, []byte("\n")) {
		// "start-end perms offset dev inode path"
		if !bytes.Contains(line, prefix) || !(bytes.HasSuffix(line, []byte(".sst")) || bytes.HasSuffix(line, []byte(".vlog"))) {
			continue
		}
		r, _, _ := bytes.Cut(line, []byte(" "))
		lo, hi, ok := bytes.Cut(r, []byte("-"))
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, mapping{start: uintptr(start), end: uintptr(end)})
	}
	countResident(out)
	return out
}

// pagemapPresent is the bit of a pagemap entry set when the page is
// mapped in the process (Documentation/admin-guide/mm/pagemap.rst).
const pagemapPresent = 1 << 63

// countResident sets the rss of each mapping from /proc/self/pagemap,
// which holds one 8-byte entry per virtual page. Where it cannot be
// read, a mapping counts as wholly resident: trimming too much only
// costs reads.
func countResident(maps []mapping) {
	page := uintptr(os.Getpagesize())
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		for i := range maps {
			maps[i].rss = int64(maps[i].end - maps[i].start)
		}
		return
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for i := range maps {
		m := &maps[i]
		m.rss = 0
		for at := m.start; at < m.end; {
			n := min((m.end-at)/page*8, uintptr(len(buf)))
			got, err := f.ReadAt(buf[:n], int64(at/page*8))
			if err != nil || got == 0 {
				m.rss = int64(m.end - m.start)
				break
			}
			for e := 0; e+8 <= got; e += 8 {
				if binary.NativeEndian.Uint64(buf[e:])&pagemapPresent != 0 {
					m.rss += int64(page)
				}
			}
			at += uintptr(got) / 8 * page
		}
	}
}
