package daemon

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// Exited reports whether process pid has exited: it is gone, or a
// zombie its parent has not reaped yet. A daemon started in the
// background is reparented when its starter exits, and what reaps it
// then (init, a container's first process) may take its time: waiting
// for the pid to vanish would wait for that, not for the daemon.
func Exited(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) || b[i+2] != 'Z' {
		return false
	}
	// The thread group's leader turns zombie while its other threads
	// may still be exiting — with the open files (a journal's lock)
	// they share. Exited is the last of them.
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return err != nil || len(tasks) <= 1
}
