package main

import (
	"os"
	"runtime/debug"
)

// defaultMemoryLimit is the Go heap the daemon aims to stay under. The
// daemon's resident set is bounded at 128 MiB (issue #15): the heap,
// plus the binary's pages (14 MiB) and Badger's mapped files (kept to
// about 16 MiB, journal/resident.go). Left to itself, Go lets the heap
// grow to twice what is live before collecting, so a rollback holding
// 55 MiB reached 110 and the whole process 145; with a limit it
// collects sooner, near the limit, and only costs CPU when what is live
// comes close to it (a soft limit: never a failure).
const defaultMemoryLimit = 80 << 20

// applyMemoryLimit sets the Go runtime's soft memory limit for the
// daemon this process runs, unless GOMEMLIMIT already did.
func applyMemoryLimit(limit byteSize) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || limit < 0 {
		return
	}
	debug.SetMemoryLimit(int64(limit))
}
