package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/cowfs/cowfs/human"
)

// execEnv marks cowfs started by cowfs run's sandbox to become the
// command; its value is the umask to give it, in octal. The mount
// leaves the process's umask alone (fs/umask.go), so the command would
// inherit cowfs run's anyway; this process still sets it before it
// execs the command, so that nothing done to the daemon's process can
// reach the command (Go cannot set a child's umask between fork and
// exec).
const execEnv = "COWFS_RUN_EXEC"

// execCommand waits until the sandbox closes descriptor 3 — it has
// then made the command's process group the terminal's foreground, so
// the command never finds itself in the background — restores the
// umask and execs os.Args[1:], as a shell would: 127 if the command
// is not found, 126 if it cannot run. It never returns.
func execCommand() {
	umask, err := strconv.ParseUint(os.Getenv(execEnv), 8, 32)
	os.Unsetenv(execEnv)
	ready := os.NewFile(3, "ready")
	io.Copy(io.Discard, ready)
	ready.Close()
	if err != nil || len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "cowfs run: started wrongly (%s=%q, %s)\n", execEnv, os.Getenv(execEnv), human.Count(len(os.Args), "argument", "arguments"))
		os.Exit(exitError)
	}
	syscall.Umask(int(umask))
	name := os.Args[1]
	path, err := exec.LookPath(name)
	if errors.Is(err, exec.ErrDot) {
		err = nil
	}
	if err == nil {
		err = syscall.Exec(path, os.Args[1:], os.Environ())
	}
	fmt.Fprintf(os.Stderr, "cowfs run: %s: %v\n", name, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT) {
		os.Exit(127)
	}
	os.Exit(126)
}
