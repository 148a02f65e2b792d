package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

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
	env := newHookEnv("gemini", hook.GeminiTurnPrefix, opts)
	defer env.cancel()
	h := hook.GeminiHook{Cowfs: executable(), Workspace: env.workspace, Turns: env.turns, Agent: env.scope}
	if env.client != nil {
		h.Window = env.client
	}
	env.finish(h.Run(env.ctx, event, in), inErr)
}
