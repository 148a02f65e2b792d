package main

import (
	"io"
	"testing"
)

// cowfs mount needs its workspace, as WORKSPACE or -w: with neither it
// is a usage error, never a mount over the current directory.
func TestMountNeedsWorkspace(t *testing.T) {
	t.Setenv("COWFS_STATE_DIR", t.TempDir())
	global = globalOptions{}
	root := newRootCommand()
	root.SetArgs([]string{"mount", "--background"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	_, err := root.ExecuteC()
	if code := exitCode(err); code != exitUsage {
		t.Errorf("cowfs mount with no workspace: exit %d (%v), want %d", code, err, exitUsage)
	}
}
