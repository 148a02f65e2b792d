package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
)

// The environment's defaults for --remote and --tls-dir.
const (
	remoteEnv = "COWFS_REMOTE"
	tlsDirEnv = "COWFS_TLS_DIR"
)

const remoteHelp = `With --remote https://HOST:PORT (or COWFS_REMOTE) commands talk to the daemon
listening there ('cowfs mount --listen') over mutual TLS instead of to the
workspace's control socket: --tls-dir DIR (or COWFS_TLS_DIR) holds ca.pem, the
CA the daemon's certificate must be signed by, and cert.pem and key.pem, this
client's. status, log, show, diff, cat, turn, rollback, undo, unrevert (redo),
markers, events and mcp work remotely; mount, umount, run, fsck, purge,
integrate and hook need the workspace on this machine and refuse --remote
(hook, wired to its workspace, ignores COWFS_REMOTE).`

// localCommands need the workspace on this machine: they mount it,
// read its journal or state directory, or write files beside it.
var localCommands = map[string]bool{
	"mount": true, "umount": true, "run": true, "fsck": true, "purge": true,
	"integrate": true, "hook": true,
}

// addRemoteFlags adds --remote and --tls-dir to every command. (mount's
// and run's own --tls-dir, the daemon's certificates, shadows the
// latter; they refuse --remote anyway.)
func addRemoteFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&global.remote, "remote", "", "talk to the daemon at `https://HOST:PORT` over mutual TLS (default: $"+remoteEnv+"; see --help)")
	f.StringVar(&global.tlsDir, "tls-dir", "", "with --remote: `DIR` with ca.pem (the daemon's CA), cert.pem and key.pem (this client's) (default: $"+tlsDirEnv+")")
}

// checkRemote settles --remote and --tls-dir from the flags and the
// environment before a command runs, and refuses what cannot work
// remotely.
func checkRemote(cmd *cobra.Command) error {
	root := cmd.Root()
	flagged := root.PersistentFlags().Lookup("remote").Changed
	if global.remote == "" {
		global.remote = os.Getenv(remoteEnv)
	}
	if !root.PersistentFlags().Lookup("tls-dir").Changed {
		global.tlsDir = os.Getenv(tlsDirEnv)
	} else if global.remote == "" {
		return usageError{fmt.Errorf("--tls-dir is this client's certificates for --remote https://HOST:PORT; give both (mount and run take their own --tls-dir)")}
	}
	if global.remote == "" {
		return nil
	}
	if !flagged && topCommand(cmd) == "hook" {
		// A hook is wired to its workspace by 'cowfs integrate' and
		// runs in the agent CLI's environment, which may carry
		// COWFS_REMOTE for the harness: it follows the workspace, and
		// keeps its promise of exit status 0.
		global.remote, global.tlsDir = "", ""
		return nil
	}
	how := "--remote"
	if !flagged {
		how = remoteEnv + "=" + global.remote
	}
	if top := topCommand(cmd); localCommands[top] {
		return usageError{fmt.Errorf("%s works on a workspace on this machine, and %s names a daemon elsewhere: run it where the workspace is%s", top, how, unsetHint(flagged))}
	}
	if global.workspace != "" {
		return usageError{fmt.Errorf("-w names a workspace on this machine, and %s a daemon elsewhere: give one of them%s", how, unsetHint(flagged))}
	}
	if _, err := ctl.ParseRemoteURL(global.remote); err != nil {
		return usageError{fmt.Errorf("%s: %w", how, err)}
	}
	if global.tlsDir == "" {
		return usageError{fmt.Errorf("%s needs --tls-dir DIR (or %s): ca.pem, cert.pem and key.pem, the certificates of mutual TLS", how, tlsDirEnv)}
	}
	return nil
}

func unsetHint(flagged bool) string {
	if flagged {
		return ""
	}
	return " (unset " + remoteEnv + ")"
}

// topCommand is the name of cmd's ancestor just below the root: "turn"
// for cowfs turn begin, "hook" for cowfs hook claude.
func topCommand(cmd *cobra.Command) string {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	return cmd.Name()
}

// remote says whether commands talk to a remote daemon.
func remote() bool { return global.remote != "" }

// remoteClient is the client of the remote daemon.
func remoteClient() (*ctl.Client, error) {
	c, err := ctl.DialRemote(global.remote, global.tlsDir)
	if errors.Is(err, ctl.ErrTLSDir) {
		return nil, fmt.Errorf("--tls-dir: %w", err)
	}
	return c, err
}
