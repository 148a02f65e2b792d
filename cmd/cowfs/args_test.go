package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// run runs cowfs with args as main does, and returns its exit code and
// error. No daemon runs: the workspace is an empty temporary directory
// with its own state root.
func run(t *testing.T, args ...string) (int, error) {
	t.Helper()
	return runArgs(t, append([]string{"-w", t.TempDir()}, args...)...)
}

// runArgs runs cowfs with args as they are, as main does, with a state
// root of its own, and returns its exit code and error.
func runArgs(t *testing.T, args ...string) (int, error) {
	t.Helper()
	t.Setenv("COWFS_STATE_DIR", t.TempDir())
	global = globalOptions{}
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	_, err := root.ExecuteC()
	return exitCode(err), err
}

// TestArguments: a command called with the wrong arguments or flags
// fails with the usage exit code before it looks for a daemon; called
// right, it looks, finds none, and says so (exit 3).
func TestArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"status", "extra"}, exitUsage},
		{[]string{"log", "extra"}, exitUsage},
		{[]string{"show"}, exitUsage},
		{[]string{"show", "1", "2"}, exitUsage},
		{[]string{"turn", "begin", "extra"}, exitUsage},
		{[]string{"turn", "end", "extra"}, exitUsage},
		{[]string{"rollback"}, exitUsage},
		{[]string{"rollback", "1", "2"}, exitUsage},
		{[]string{"undo", "1"}, exitUsage},
		{[]string{"unrevert", "1"}, exitUsage},
		{[]string{"markers", "1"}, exitUsage},
		{[]string{"events", "1"}, exitUsage},
		{[]string{"cat", "--at", "1"}, exitUsage},
		{[]string{"cat", "f"}, exitUsage}, // --at is required
		{[]string{"mount", "a", "b"}, exitUsage},
		{[]string{"mount", "--window", "0", "/nonexistent"}, exitUsage},
		{[]string{"mount", "--max-nodes", "10", "/nonexistent"}, exitUsage},
		{[]string{"diff"}, exitUsage},
		{[]string{"diff", "1", "2", "3"}, exitUsage},
		{[]string{"umount", "a", "b"}, exitUsage},
		{[]string{"status", "--no-such-flag"}, exitUsage},
		{[]string{"rollback", "--dry-run=maybe", "1"}, exitUsage},

		{[]string{"--help"}, exitOK},
		{[]string{"--version"}, exitOK},
		{[]string{"rollback", "--help"}, exitOK},
		{[]string{"turn", "begin", "--help"}, exitOK},

		{[]string{"status"}, exitNotRunning},
		{[]string{"log"}, exitNotRunning},
		{[]string{"show", "1"}, exitNotRunning},
		{[]string{"turn", "begin"}, exitNotRunning},
		{[]string{"rollback", "1"}, exitNotRunning},
		{[]string{"diff", "1"}, exitNotRunning},
		{[]string{"diff", "1", "now"}, exitNotRunning},
		{[]string{"cat", "--at", "1", "f"}, exitNotRunning},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			if code, err := run(t, c.args...); code != c.code {
				t.Errorf("exit %d (%v), want %d", code, err, c.code)
			}
		})
	}
}

// TestEmptyPaths: an empty path — WORKSPACE, or a flag that takes one —
// is a usage error (exit 2), never the current directory or a default,
// and nothing is created: not in the current directory, not in the
// state directory. (Mounting over the current directory, and cowfs
// run, are checked end to end in test/e2e.)
func TestEmptyPaths(t *testing.T) {
	for _, args := range [][]string{
		{"purge", ""},
		{"umount", ""},
		{"fsck", ""},
		{"-w", "", "status"},
		{"-w", "", "purge"},
		{"-w", "", "log"},
		{"-w", "", "rollback", "1"},
		{"--workspace=", "turn", "begin"},
		{"purge", "--journal", ""},
		{"fsck", "--export", ""},
		{"mount", "--journal", "", "/nonexistent"},
		{"mount", "--mountpoint", "", "/nonexistent"},
		{"mount", "--cpuprofile", "", "/nonexistent"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cwd, state := t.TempDir(), t.TempDir()
			t.Chdir(cwd)
			t.Setenv("COWFS_STATE_DIR", state)
			global = globalOptions{}
			root := newRootCommand()
			root.SetArgs(args)
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			_, err := root.ExecuteC()
			if code := exitCode(err); code != exitUsage || !strings.Contains(fmt.Sprint(err), "is empty") {
				t.Errorf("exit %d (%v), want %d and a message that says the path is empty", code, err, exitUsage)
			}
			for _, dir := range []string{cwd, state} {
				if ents, _ := os.ReadDir(dir); len(ents) > 0 {
					t.Errorf("%s holds %s afterwards", dir, ents[0].Name())
				}
			}
		})
	}
}

// TestTurnRefArguments: a TURN or turn id that reads as a number but is
// no turn number is a usage error (exit 2) before any daemon is looked
// for; decimal digits, leading zeros too, and ids go on to look (exit 3:
// none runs).
func TestTurnRefArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"rollback", "99999999999999999999"}, exitUsage},
		{[]string{"rollback", "0x10"}, exitUsage},
		{[]string{"rollback", "1e3"}, exitUsage},
		{[]string{"rollback", "--", "-1"}, exitUsage},
		{[]string{"show", "+5"}, exitUsage},
		{[]string{"show", " 7"}, exitUsage},
		{[]string{"cat", "--at", "1.5", "f"}, exitUsage},
		{[]string{"diff", "1", "0b11"}, exitUsage},
		{[]string{"turn", "begin", "--id", "42"}, exitUsage},
		{[]string{"turn", "begin", "--id", "07"}, exitUsage},
		{[]string{"turn", "begin", "--id", "-1"}, exitUsage},
		{[]string{"turn", "begin", "--id", "1e3"}, exitUsage},
		{[]string{"turn", "begin", "--id", "99999999999999999999"}, exitUsage},

		{[]string{"rollback", "07"}, exitNotRunning},
		{[]string{"rollback", "call-7"}, exitNotRunning},
		{[]string{"diff", "1", "now"}, exitNotRunning},
		{[]string{"turn", "begin", "--id", "v1.2.3"}, exitNotRunning},
		{[]string{"turn", "begin", "--id", "nan"}, exitNotRunning},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			if code, err := run(t, c.args...); code != c.code {
				t.Errorf("exit %d (%v), want %d", code, err, c.code)
			}
		})
	}
}
