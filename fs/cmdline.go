package fs

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// A change is journaled with the command line of the process that made
// it (journal.Caller.Cmdline), not only its comm, which the kernel cuts
// to 15 bytes ("npm pkg set scr"). The process is untrusted and the
// daemon is root, so the command line is read with care:
//
//   - through a descriptor of /proc checked to be procfs, with openat2
//     refusing every symlink and mount crossing below it: "PID/cmdline"
//     names that process's file and nothing else;
//   - at most maxCmdline+1 bytes, whatever the process put in its
//     argument area;
//   - escaped: NULs between arguments become spaces, and control and
//     other non-printable characters (bidirectional overrides too) and
//     bytes that are not UTF-8 become \xNN, byte by byte, so no reader
//     of the journal prints a terminal escape from it;
//   - without waiting on the process: reading another process's
//     command line takes its mmap lock, which a thread of it may hold
//     (a page fault) while another waits to write it (mmap), and the
//     holder may be waiting on this very daemon. A read that does not
//     finish within cmdlineWait is given up (the change keeps its
//     comm), and at most maxCmdlineReads wait at once.
const (
	maxCmdline      = 256
	cmdlineWait     = 20 * time.Millisecond
	maxCmdlineReads = 8
)

// procfs is /proc, opened once (O_PATH) and checked to be procfs.
var procfs = struct {
	once sync.Once
	fd   int
}{fd: -1}

func procRoot() int {
	procfs.once.Do(func() {
		fd, err := unix.Open("/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		var st unix.Statfs_t
		if unix.Fstatfs(fd, &st) != nil || st.Type != unix.PROC_SUPER_MAGIC {
			unix.Close(fd)
			return
		}
		procfs.fd = fd
	})
	return procfs.fd
}

// cmdlineReads counts the reads under way, given up on or not.
var cmdlineReads atomic.Int32

// readCmdline returns process pid's command line as journaled, or ""
// if it cannot be read at once (see above).
func readCmdline(pid uint32) string {
	if cmdlineReads.Add(1) > maxCmdlineReads {
		cmdlineReads.Add(-1)
		return ""
	}
	done := make(chan string, 1)
	go func() {
		defer cmdlineReads.Add(-1)
		done <- readCmdlineNow(pid)
	}()
	t := time.NewTimer(cmdlineWait)
	defer t.Stop()
	select {
	case s := <-done:
		return s
	case <-t.C:
		return ""
	}
}

// readCmdlineNow reads and escapes /proc/PID/cmdline.
func readCmdlineNow(pid uint32) string {
	root := procRoot()
	if root < 0 || pid == 0 {
		return ""
	}
	fd, err := unix.Openat2(root, strconv.FormatUint(uint64(pid), 10)+"/cmdline", &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var buf [maxCmdline + 1]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil || n <= 0 {
		return "" // a kernel thread, or a process on its way out
	}
	return escapeCmdline(buf[:n], n > maxCmdline)
}

// escapeCmdline turns the raw bytes of a command line (arguments ended
// by NULs) into what is journaled: arguments joined by spaces, control
// bytes and bytes that are not UTF-8 as \xNN, at most maxCmdline bytes,
// ending in "…" if cut (or if more was there: more).
func escapeCmdline(b []byte, more bool) string {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	const hex = "0123456789abcdef"
	const ellipsis = "…"
	out := make([]byte, 0, len(b))
	fits := 0 // the end of the last piece that leaves room for the ellipsis
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case b[0] == 0:
			out = append(out, ' ')
		case r == utf8.RuneError && size == 1, !unicode.IsPrint(r) && r != ' ':
			for _, c := range b[:size] {
				out = append(out, '\\', 'x', hex[c>>4], hex[c&0xf])
			}
		default:
			out = append(out, b[:size]...)
		}
		if len(out) <= maxCmdline-len(ellipsis) {
			fits = len(out)
		}
		b = b[size:]
	}
	if len(out) <= maxCmdline && !more {
		return string(out)
	}
	return string(out[:fits]) + ellipsis
}
