package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/daemon"
)

type catOptions struct {
	at string
}

func newCatCommand() *cobra.Command {
	var opts catOptions
	cmd := &cobra.Command{
		Use:   "cat --at TURN PATH",
		Short: "Print a file as it was when a turn began",
		Long: `Print PATH's content as it was when TURN began: from the journal, or from the
live file if nothing has changed it since. PATH is relative to the workspace
root, or absolute inside the workspace.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTurnRefs(opts.at); err != nil {
				return err
			}
			return runCat(opts, args[0])
		},
	}
	cmd.Flags().StringVar(&opts.at, "at", "", "the turn (number or id)")
	cmd.MarkFlagRequired("at")
	return cmd
}

func runCat(opts catOptions, path string) error {
	c, loc, err := client()
	if err != nil {
		return err
	}
	rel, err := workspaceRelative(loc, path)
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	rc, err := c.Content(ctx, opts.at, rel)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(os.Stdout, rc)
	return err
}

// workspaceRelative turns an absolute path inside the workspace (its
// backing directory or its mountpoint) into one relative to its root.
// A relative path is taken as relative to the root already.
func workspaceRelative(loc daemon.Location, path string) (string, error) {
	if !filepath.IsAbs(path) {
		return path, nil
	}
	roots := []string{loc.Workspace}
	ctx, cancel := requestContext()
	defer cancel()
	if c, _, err := client(); err == nil {
		if st, err := c.Status(ctx); err == nil {
			roots = append(roots, st.Mountpoint, st.Workspace)
		}
	}
	clean := filepath.Clean(path)
	for _, root := range roots {
		if clean == root {
			return ".", nil
		}
		if strings.HasPrefix(clean, root+"/") {
			return clean[len(root)+1:], nil
		}
	}
	return "", usageError{fmt.Errorf("%s is not inside the workspace %s", path, loc.Workspace)}
}
