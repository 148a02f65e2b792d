package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/hook"
)

// hookGeminiCmd is cowfs hook gemini EVENT, which Gemini CLI runs at
// the events cowfs integrate gemini hooks.
func hookGeminiCmd() *cobra.Command {
	var opts hookOptions
	cmd := &cobra.Command{
		Use:   "gemini EVENT",
		Short: "Gemini CLI's hook: a prompt begins a turn, a tool call a step, the answer's end ends it",
		Long: `Run by Gemini CLI at EVENT, with the hook's JSON on standard input; 'cowfs
integrate gemini' writes it into .gemini/settings.json. EVENT is one of:

  BeforeAgent             begin a turn (id gemini-SID8-N: the session's first 8
                          characters and its Nth turn; anchor SESSION/MESSAGE,
                          the conversation's last message before the prompt),
                          ending first a turn an earlier prompt left open;
                          hand the model the notes of markers rollbacks left
                          since (once each)
  BeforeTool              begin a step named TOOL@HH:MM:SS.mmm (Gemini CLI
                          gives hooks no tool call id)
  AfterAgent, SessionEnd  end the turn

With no daemon serving the workspace, or a turn open that these hooks did not
begin, BeforeAgent denies the prompt and says why. The exit status is always 0.

The turn's agent is Gemini CLI's process and its descendants (--agent-scope
agent); --agent-scope mount leaves it to the mount's default.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.agentScope != scopeAgentCLI && opts.agentScope != scopeMount {
				return usageError{fmt.Errorf("--agent-scope is %q; it is %s or %s", opts.agentScope, scopeAgentCLI, scopeMount)}
			}
			runHookGemini(opts, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.agentScope, "agent-scope", scopeAgentCLI, "the turns' agent: `agent` (Gemini CLI and its descendants) or mount (the mount's default)")
	return cmd
}

func runHookGemini(opts hookOptions, event string) {
	in, inErr := hook.ReadGeminiInput(os.Stdin)
	h := hook.GeminiHook{Cowfs: executable(), Workspace: global.workspace}
	if h.Workspace == "" {
		h.Workspace, _ = os.Getwd()
	}
	loc, err := located()
	var res hook.Result
	if err != nil {
		h.Turns = hook.Turns{Daemon: hook.NoDaemon(err), Prefix: hook.GeminiTurnPrefix}
		res = h.Run(context.Background(), event, in)
	} else {
		c := ctl.NewClient(loc.Socket())
		h.Workspace = loc.Workspace
		h.Turns = hook.Turns{Daemon: c, Prefix: hook.GeminiTurnPrefix}
		h.Window = c
		if fi, err := os.Stat(loc.Dir); err == nil && fi.IsDir() {
			h.Turns.Delivered = filepath.Join(loc.Dir, deliveredFile("gemini"))
		}
		if opts.agentScope == scopeAgentCLI {
			if pid := hook.AgentProcess(); pid != 0 {
				h.Agent = &ctl.AgentScope{Pids: []uint32{pid}}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
		res = h.Run(ctx, event, in)
		cancel()
	}
	if inErr != nil {
		res.Stderr = fmt.Sprintf("cowfs hook gemini: %v\n", inErr) + res.Stderr
	}
	os.Stdout.Write(res.Stdout)
	fmt.Fprint(os.Stderr, res.Stderr)
}
