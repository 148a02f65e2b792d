package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/hook"
)

type hookOptions struct {
	agentScope string
}

// Agent scopes a hook can give its turns.
const (
	scopeAgentCLI = "agent" // the agent CLI's process and its descendants
	scopeMount    = "mount" // the mount's default (cowfs mount --agent-*)
)

func newHookCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Run as an agent CLI's hook (see 'cowfs integrate')",
		Args:  exactArgs(0),
	}
	var opts hookOptions
	claude := &cobra.Command{
		Use:   "claude-code EVENT",
		Short: "Claude Code's hook: a prompt begins a turn, a tool call a step, the answer's end ends it",
		Long: `Run by Claude Code at EVENT, with the hook's JSON on standard input; 'cowfs
integrate claude-code' writes it into .claude/settings.json. EVENT is one of:

  UserPromptSubmit  begin a turn (id cc- and 8 digits of prompt_id, anchor
                    SESSION/PROMPT), ending first a turn an earlier prompt left
                    open; hand the model the notes of markers rollbacks left
                    since (once each)
  PreToolUse        begin a step named by tool_use_id
  Stop, SessionEnd  end the turn

With no daemon serving the workspace, or a turn open that these hooks did not
begin, UserPromptSubmit blocks the prompt and says why; the other events only
say so on standard error. The exit status is always 0.

The turn's agent is Claude Code's process and its descendants (--agent-scope
agent); --agent-scope mount leaves it to the mount's default.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.agentScope != scopeAgentCLI && opts.agentScope != scopeMount {
				return usageError{fmt.Errorf("--agent-scope is %q; it is %s or %s", opts.agentScope, scopeAgentCLI, scopeMount)}
			}
			runHookClaude(opts, args[0])
			return nil
		},
	}
	claude.Flags().StringVar(&opts.agentScope, "agent-scope", scopeAgentCLI, "the turns' agent: `agent` (Claude Code and its descendants) or mount (the mount's default)")
	cmd.AddCommand(claude, hookGeminiCmd())
	return cmd
}

// hookTimeout bounds a hook's requests, under the 30 s Claude Code is
// told to wait for it.
const hookTimeout = 20 * time.Second

func runHookClaude(opts hookOptions, event string) {
	in, inErr := hook.ReadClaudeInput(os.Stdin)
	env := newHookEnv("claude-code", hook.ClaudeTurnPrefix, opts)
	defer env.cancel()
	h := hook.ClaudeHook{Cowfs: executable(), Workspace: env.workspace, Turns: env.turns, Agent: env.scope}
	env.finish(h.Run(env.ctx, event, in), inErr)
}

// hookEnv is what one run of 'cowfs hook AGENT EVENT' finds: the
// workspace, its daemon (a stand-in that answers "no daemon" if none
// serves it), where delivered markers are remembered, and the agent
// scope its turns get.
type hookEnv struct {
	agent     string // the AGENT of 'cowfs hook AGENT'
	workspace string
	client    *ctl.Client // nil with no daemon
	turns     hook.Turns
	scope     *ctl.AgentScope
	ctx       context.Context
	cancel    context.CancelFunc
}

func newHookEnv(agent, prefix string, opts hookOptions) hookEnv {
	env := hookEnv{agent: agent, workspace: global.workspace}
	if env.workspace == "" {
		env.workspace, _ = os.Getwd()
	}
	env.ctx, env.cancel = context.WithTimeout(context.Background(), hookTimeout)
	loc, err := located()
	if err != nil {
		env.turns = hook.Turns{Daemon: hook.NoDaemon(err), Prefix: prefix}
		return env
	}
	env.workspace = loc.Workspace
	env.client = ctl.NewClient(loc.Socket())
	env.turns = hook.Turns{Daemon: env.client, Prefix: prefix}
	if fi, err := os.Stat(loc.Dir); err == nil && fi.IsDir() {
		env.turns.Delivered = filepath.Join(loc.Dir, deliveredFile(agent))
	}
	if opts.agentScope == scopeAgentCLI {
		if pid := hook.AgentProcess(); pid != 0 {
			env.scope = &ctl.AgentScope{Pids: []uint32{pid}}
		}
	}
	return env
}

// finish answers the agent CLI: res's JSON on standard output, its
// message (and a hook input that could not be read) on standard error.
// The exit status stays 0: a hook must not stop the agent.
func (env hookEnv) finish(res hook.Result, inErr error) {
	if inErr != nil {
		res.Stderr = fmt.Sprintf("cowfs hook %s: %v\n", env.agent, inErr) + res.Stderr
	}
	os.Stdout.Write(res.Stdout)
	fmt.Fprint(os.Stderr, res.Stderr)
}

// deliveredFile names the file in a workspace's state directory that
// remembers which markers an agent's hooks handed on.
func deliveredFile(agent string) string { return "hook-" + agent + ".delivered" }

// executable is this binary's absolute path, for hook commands and
// messages.
func executable() string {
	p, err := os.Executable()
	if err != nil {
		return "cowfs"
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}
