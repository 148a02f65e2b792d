package daemon

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/cowfs/cowfs/ctl"
)

// resources reads what this process holds: goroutines, descriptors,
// resident memory now and at its peak.
func resources() ctl.Resources {
	r := ctl.Resources{Goroutines: runtime.NumGoroutine()}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		r.OpenFiles = len(ents) - 1 // the directory being read
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		var size, resident int64
		if n, _ := fmt.Sscan(string(b), &size, &resident); n == 2 {
			r.RSSBytes = resident * int64(os.Getpagesize())
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.MaxRSSBytes = ru.Maxrss * 1024
	}
	return r
}
