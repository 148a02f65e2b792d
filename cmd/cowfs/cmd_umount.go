package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

type umountOptions struct {
	force bool
}

func newUmountCommand() *cobra.Command {
	var opts umountOptions
	cmd := &cobra.Command{
		Use:   "umount [WORKSPACE]",
		Short: "Unmount a workspace and stop its daemon",
		Long: `Ask the workspace's daemon to unmount and exit, and wait until it has. If no
daemon answers, clear a stale mount left by one that died; with --force, also
detach a cowfs mount whose daemon hangs.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				global.workspace = args[0]
			}
			return runUmount(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.force, "force", false, "detach the mount even if its daemon does not answer")
	return cmd
}

func runUmount(opts umountOptions) error {
	c, loc, err := client()
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	st, err := c.Status(ctx)
	if errors.Is(err, ctl.ErrNotRunning) {
		cleared, uerr := daemon.Unmount(loc.Workspace, opts.force)
		if uerr != nil {
			return uerr
		}
		if cleared {
			fmt.Fprintf(os.Stderr, "cowfs: cleared the mount of %s; its daemon was gone\n", loc.Workspace)
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if err := c.Shutdown(ctx); err != nil {
		return err
	}
	// The daemon removes its socket once it has unmounted and closed
	// the journal, then exits.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(loc.Socket())
		if errors.Is(err, os.ErrNotExist) && daemon.Exited(st.Pid) {
			fmt.Fprintf(os.Stderr, "cowfs: unmounted %s\n", st.Mountpoint)
			return nil
		}
	}
	return fmt.Errorf("daemon %d has not exited after a minute: processes may still use %s (it was detached)", st.Pid, st.Mountpoint)
}
