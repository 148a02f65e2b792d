package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// pathFlags are the flags that name a file or directory. Each has a
// default it falls back on when not given — the current directory, the
// state directory, none — and an empty value would quietly mean that
// default: `cowfs purge -w "$WS"` with WS unset would purge the
// current directory's workspace. An empty value is refused instead.
var pathFlags = []string{"workspace", "mountpoint", "journal", "export", "cpuprofile", "tls-dir"}

// errEmptyPath: a path argument or flag given as the empty string.
var errEmptyPath = errors.New("is empty: an empty path names nothing (. is the current directory)")

// checkPathFlags refuses a path flag of cmd given an empty value.
func checkPathFlags(cmd *cobra.Command) error {
	for _, name := range pathFlags {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed && f.Value.String() == "" {
			return usageError{fmt.Errorf("--%s %w", name, errEmptyPath)}
		}
	}
	return nil
}

// workspaceArg takes the optional WORKSPACE argument of a command, in
// place of -w; an empty one is refused.
func workspaceArg(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if args[0] == "" {
		return usageError{fmt.Errorf("WORKSPACE %w", errEmptyPath)}
	}
	global.workspace = args[0]
	return nil
}
