package hook

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// shells are the programs an agent CLI runs its hook commands through
// (sh -c); the agent is the first ancestor of the hook that is none.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ash": true, "busybox": true, "fish": true}

// AgentProcess returns the pid of the agent CLI that runs this hook:
// the nearest ancestor that is not a shell. Zero if there is none to
// find (the hook was run by hand from a shell, or /proc says nothing).
func AgentProcess() uint32 {
	return agentAncestor(os.Getppid(), procInfo)
}

// agentAncestor walks up from pid with info, which gives a process's
// name and parent.
func agentAncestor(pid int, info func(pid int) (name string, ppid int, err error)) uint32 {
	for i := 0; i < 8 && pid > 1; i++ {
		name, ppid, err := info(pid)
		if err != nil {
			return 0
		}
		if !shells[name] {
			return uint32(pid)
		}
		pid = ppid
	}
	return 0
}

// procInfo reads a process's name and parent from /proc/PID/stat.
func procInfo(pid int) (string, int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return "", 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := bytes.Fields(b[close+1:])
	if len(fields) < 2 {
		return "", 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return string(b[open+1 : close]), ppid, err
}
