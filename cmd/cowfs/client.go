package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

// located finds the workspace named by -w (or the current directory).
func located() (daemon.Location, error) {
	ws := global.workspace
	if ws == "" {
		var err error
		if ws, err = os.Getwd(); err != nil {
			return daemon.Location{}, err
		}
	}
	return daemon.Find(ws)
}

// client returns a control-socket client for the workspace.
func client() (*ctl.Client, daemon.Location, error) {
	loc, err := located()
	if err != nil {
		return nil, loc, err
	}
	return ctl.NewClient(loc.Socket()), loc, nil
}

// call runs fn with a client for the workspace and a bounded context.
func call(fn func(ctx context.Context, c *ctl.Client) error) error {
	c, _, err := client()
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	return fn(ctx, c)
}

// requestContext bounds a control request.
func requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Minute)
}

// printJSON writes v as indented JSON to stdout.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// humanBytes formats n as 1.5 KiB, 3.2 MiB …
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// when formats a time for tables.
func when(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }
