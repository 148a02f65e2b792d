package daemon

import (
	"fmt"

	"github.com/cowfs/cowfs/agent"
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

// Who a turn's agent is. A turn names its agent's processes when it
// begins (ctl.BeginTurnRequest.Agent), or gets the daemon's default
// (Options.Agent: cowfs mount --agent-*, and cowfs run's command); the
// scope, resolved — each process with its start time, each cgroup as
// /proc writes it — is stored with the turn, and package fs asks
// package agent whether each change's process is in it.

// turnScope resolves the scope a turn that begins with req gets.
func (d *Daemon) turnScope(req *ctl.AgentScope) (*journal.Scope, error) {
	if req != nil {
		spec := specOf(*req)
		if !spec.Empty() {
			s, err := d.agents.Resolve(spec)
			if err != nil {
				return nil, ctl.Errorf(ctl.CodeBadRequest, "agent: %v", err)
			}
			return s, nil
		}
	}
	d.agentMu.Lock()
	defer d.agentMu.Unlock()
	return d.defaultAgent, nil
}

// SetDefaultAgent makes spec the agent scope of turns that name none,
// from the next turn on: cowfs run scopes turns to its command once it
// has started it.
func (d *Daemon) SetDefaultAgent(scope ctl.AgentScope) error {
	spec := specOf(scope)
	s, err := d.agents.Resolve(spec)
	if err != nil {
		return fmt.Errorf("the agent scope: %w", err)
	}
	d.agentMu.Lock()
	d.defaultAgent = s
	d.agentMu.Unlock()
	return nil
}

// scopeOf is a stored scope as the API shows it.
func scopeOf(s *journal.Scope) *ctl.AgentScope {
	if s.Empty() {
		return nil
	}
	out := &ctl.AgentScope{Uids: s.Uids, Cgroups: s.Cgroups}
	for _, p := range s.Pids {
		out.Pids = append(out.Pids, p.Pid)
	}
	return out
}

// specOf is a scope as the wire gives it, as package agent takes it.
func specOf(s ctl.AgentScope) agent.Spec {
	return agent.Spec{Uids: s.Uids, Pids: s.Pids, Cgroups: s.Cgroups}
}

// Errors a scope naming what is not there fails with, for the CLI's
// exit codes.
var (
	ErrNoProcess = agent.ErrNoProcess
	ErrNoCgroup  = agent.ErrNoCgroup
)
