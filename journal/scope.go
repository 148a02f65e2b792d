package journal

// Scope names the processes that are a turn's agent, as the harness gave
// them (package agent says who is in it). A change made during the turn
// by any other process — a person's editor, a second tool — is journaled
// with its pre-image like every change, but marked NotAgent: it is not
// the turn's, and rollbacks treat it as a change made outside a turn. A
// turn without a scope belongs to every process.
type Scope struct {
	// Uids: processes whose filesystem uid is one of these.
	Uids []uint32 `json:"uids,omitempty"`
	// Pids: these processes and every process descended from them since
	// they were followed, wherever they were re-parented to.
	Pids []Process `json:"pids,omitempty"`
	// Cgroups: processes in these cgroups (cgroup v2 paths, as
	// /proc/PID/cgroup gives them) or in cgroups beneath them.
	Cgroups []string `json:"cgroups,omitempty"`
}

// Process names one process across pid reuse: its pid, and when it
// started (clock ticks after boot, field 22 of /proc/PID/stat).
type Process struct {
	Pid   uint32 `json:"pid"`
	Start uint64 `json:"start"`
}

// Empty reports whether s names nobody: then every process is the agent.
func (s *Scope) Empty() bool {
	return s == nil || len(s.Uids)+len(s.Pids)+len(s.Cgroups) == 0
}
