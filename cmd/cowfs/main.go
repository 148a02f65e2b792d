// Command cowfs makes an AI coding agent's workspace rewindable: it
// mounts a journaling filesystem over the workspace and answers a
// control socket through which a harness begins and ends turns, sees
// what each changed, and rolls back.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// globalOptions are flags every command takes.
type globalOptions struct {
	workspace string
	command   string // the command running, by name
	// remote and tlsDir name a daemon elsewhere and this client's
	// certificates (remote.go).
	remote, tlsDir string
}

var global globalOptions

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "cowfs",
		Short: "Rewindable workspaces for AI coding agents",
		Long: `cowfs mounts a journaling filesystem over an agent's workspace. Every change
that reaches the workspace through the mount is journaled, before it happens,
per turn (one user prompt and the agent run that answers it). A harness
begins and ends turns over a control socket, sees what each changed, and can
roll the workspace back.

Commands find the daemon from -w WORKSPACE (default: the current directory,
or the nearest parent with a mounted workspace). An empty path, as WORKSPACE
or to any flag that takes one, is refused (exit 2), never taken for the
current directory.

` + remoteHelp + `

TURN is a turn number in decimal digits (7; 07 is the same turn) or the
harness's id for the turn, and no id reads as a number. A TURN that reads as
a number in any other way (-1, +5, 0x10, 1e3, 1.5, or one too large for 64
bits) names no turn and is refused (exit 2).

` + exitCodeHelp,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			global.command = cmd.Name()
			if err := checkPathFlags(cmd); err != nil {
				return err
			}
			return checkRemote(cmd)
		},
	}
	root.PersistentFlags().StringVarP(&global.workspace, "workspace", "w", "", "the workspace (default: the current directory)")
	addRemoteFlags(root)
	root.AddCommand(
		newMountCommand(),
		newUmountCommand(),
		newStatusCommand(),
		newTurnCommand(),
		newLogCommand(),
		newShowCommand(),
		newCatCommand(),
		newRollbackCommand(),
		newUndoCommand(),
		newUnrevertCommand(),
		newMarkersCommand(),
		newEventsCommand(),
		newDiffCommand(),
		newRunCommand(),
		newPurgeCommand(),
		newFsckCommand(),
		newMCPCommand(),
		newIntegrateCommand(),
		newHookCommand(),
	)
	usageErrors(root)
	return root
}

func main() {
	closeInheritedOnExec() // inherited.go
	if os.Getenv(execEnv) != "" {
		execCommand() // cowfs run's command, on its way (run_exec.go)
	}
	cmd, err := newRootCommand().ExecuteC()
	if offline != nil {
		offline.Close()
	}
	if err == nil {
		return
	}
	err = hinted(err) // hints.go
	if !errors.As(err, new(exitStatus)) {
		// The whole command path: "cowfs turn end:", not "cowfs end:".
		fmt.Fprintf(os.Stderr, "%s: %v\n", cmd.CommandPath(), err)
	}
	os.Exit(exitCode(err))
}
