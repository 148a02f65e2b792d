package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

type catOptions struct {
	at   string
	json bool
}

func newCatCommand() *cobra.Command {
	var opts catOptions
	cmd := &cobra.Command{
		Use:   "cat --at TURN PATH",
		Short: "Print a file as it was when a turn began",
		Long: `Print PATH's content as it was when TURN began: from the journal, or from the
live file if nothing has changed it since. PATH is relative to the workspace
root, or absolute inside the workspace.

With --json it prints {"path", "at", "content", "size"}: content is the bytes
in base64, exact whatever they are (decode with jq -r .content | base64 -d),
and size their number.`,
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
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the path, the turn and the content (base64) as JSON")
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
	if opts.json {
		return printContentJSON(os.Stdout, rel, opts.at, rc)
	}
	_, err = io.Copy(os.Stdout, rc)
	return err
}

// printContentJSON writes {"path", "at", "content", "size"} to w, the
// content in base64 as it streams from r: a file of any size is never
// held in memory whole. Its size, known only at the end, comes last.
func printContentJSON(w io.Writer, path, at string, r io.Reader) error {
	field := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\n  \"path\": %s,\n  \"at\": %s,\n  \"content\": \"", field(ctl.Path(path)), field(at))
	enc := base64.NewEncoder(base64.StdEncoding, bw)
	n, err := io.Copy(enc, r)
	if err != nil {
		return err
	}
	enc.Close()
	fmt.Fprintf(bw, "\",\n  \"size\": %d\n}\n", n)
	return bw.Flush()
}

// workspaceRelative turns an absolute path inside the workspace (its
// backing directory or its mountpoint) into one relative to its root.
// A relative path is taken as relative to the root already.
func workspaceRelative(loc daemon.Location, path string) (string, error) {
	if !filepath.IsAbs(path) {
		return path, nil
	}
	// (A remote client has no location: the daemon's status names
	// the workspace, as it is on the daemon's machine.)
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
		if root == "" {
			continue
		}
		if clean == root {
			return ".", nil
		}
		if strings.HasPrefix(clean, root+"/") {
			return clean[len(root)+1:], nil
		}
	}
	return "", usageError{fmt.Errorf("%s is not inside the workspace %s", path, loc.Workspace)}
}
