package main

import (
	"math"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// closeInheritedOnExec makes every descriptor cowfs inherited beyond
// standard input, output and error close-on-exec, before it starts
// anything: whatever its starter left open (a harness's sockets, a file
// outside the workspace) reaches neither the daemon cowfs mount
// --background starts nor cowfs run's sandbox and command. The command
// is untrusted and often drops to another uid; like sudo, cowfs run
// gives it standard input, output and error and nothing else.
// Descriptors cowfs opens itself are close-on-exec from the start (Go's
// os and net, O_CLOEXEC on every raw open; /dev/fuse in
// third_party/go-fuse-cloexec.patch), and those it hands a child of its
// own (the ready and signal pipes) are dup'ed into the child by os/exec.
func closeInheritedOnExec() {
	// One call since Linux 5.11.
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
