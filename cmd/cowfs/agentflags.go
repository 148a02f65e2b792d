package main

import (
	"github.com/spf13/pflag"

	"github.com/cowfs/cowfs/ctl"
)

// agentFlags name a turn's agent: --agent-uid, --agent-pid and
// --agent-cgroup, each repeatable (or comma-separated).
type agentFlags struct {
	uids, pids []uint
	cgroups    []string
}

// add adds the flags; of says whose agent they name ("the turn's",
// "turns'").
func (f *agentFlags) add(fs *pflag.FlagSet, of string) {
	fs.UintSliceVar(&f.uids, "agent-uid", nil, "only processes with filesystem uid `UID` are "+of+" agent (repeatable)")
	fs.UintSliceVar(&f.pids, "agent-pid", nil, "only process `PID` and its descendants, followed across fork, exec and re-parenting, are "+of+" agent (repeatable)")
	fs.StringSliceVar(&f.cgroups, "agent-cgroup", nil, "only processes in cgroup `PATH` (cgroup v2, as /proc/PID/cgroup names it) or beneath it are "+of+" agent (repeatable)")
}

func (f agentFlags) empty() bool { return len(f.uids)+len(f.pids)+len(f.cgroups) == 0 }

// spec is the flags as an agent scope (empty if none were given).
func (f agentFlags) spec() ctl.AgentScope {
	var s ctl.AgentScope
	for _, u := range f.uids {
		s.Uids = append(s.Uids, uint32(u))
	}
	for _, p := range f.pids {
		s.Pids = append(s.Pids, uint32(p))
	}
	s.Cgroups = f.cgroups
	return s
}

// scope is the flags as a request's agent, or nil if none was given.
func (f agentFlags) scope() *ctl.AgentScope {
	if f.empty() {
		return nil
	}
	s := f.spec()
	return &s
}

// agentHelp explains the scope flags, for the long help of the
// commands that take them.
const agentHelp = `Who is the agent: --agent-uid, --agent-pid and --agent-cgroup name the
processes whose changes are the turn's (any of them; each repeatable).
A change any other process makes during the turn — a person's editor, a
second tool — is journaled but is not the turn's: 'show', 'log', 'diff' and
'events' mark it as not the agent's, and no rollback undoes it (unless
--force); the turn's changes to the same paths are then skipped and
reported. --agent-pid follows the process's descendants across fork and
exec, also a daemon it leaves behind; --agent-cgroup takes a cgroup v2
path (/system.slice/agent.scope, or the same under /sys/fs/cgroup). With
none, every process is the agent.`
