package main

import (
	"strings"
	"testing"
)

// TestRemoteFlags: --remote and --listen are refused before anything is
// tried where they cannot work, and say why.
func TestRemoteFlags(t *testing.T) {
	dir := t.TempDir()
	const url = "https://127.0.0.1:1"
	for _, c := range []struct {
		env  string // COWFS_REMOTE
		args []string
		code int
		want string
	}{
		{"", []string{"--remote", url, "--tls-dir", dir, "umount"}, exitUsage, "on this machine"},
		{"", []string{"--remote", url, "--tls-dir", dir, "hook", "claude-code", "UserPromptSubmit"}, exitUsage, "hook works on a workspace on this machine"},
		{"", []string{"--remote", url, "--tls-dir", dir, "integrate", "claude-code"}, exitUsage, "on this machine"},
		{url, []string{"purge"}, exitUsage, "unset COWFS_REMOTE"},
		{url, []string{"run", "--", "true"}, exitUsage, "unset COWFS_REMOTE"},
		{"", []string{"--remote", url, "--tls-dir", dir, "-w", dir, "status"}, exitUsage, "-w names a workspace"},
		{"", []string{"--remote", "http://127.0.0.1:1", "--tls-dir", dir, "status"}, exitUsage, "mutual TLS only"},
		{"", []string{"--remote", url, "status"}, exitUsage, "needs --tls-dir"},
		{"", []string{"--tls-dir", dir, "status"}, exitUsage, "give both"},
		{"", []string{"--remote", url, "--tls-dir", dir, "status"}, exitError, "ca.pem"}, // an empty directory
		{"", []string{"--remote", url, "--tls-dir", "", "status"}, exitUsage, "empty"},
		{"", []string{"mount", "--listen", url, dir}, exitUsage, "needs --tls-dir"},
		{"", []string{"mount", "--listen", "http://127.0.0.1:1", "--tls-dir", dir, dir}, exitUsage, "https://"},
		{"", []string{"mount", "--tls-dir", dir, dir}, exitUsage, "--listen"},
		{"", []string{"run", "--listen", url, "--", "true"}, exitUsage, "needs --tls-dir"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Setenv(remoteEnv, c.env)
			t.Setenv(tlsDirEnv, "")
			code, err := runArgs(t, c.args...)
			if code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("exit %d, %v; want %d saying %q", code, err, c.code, c.want)
			}
		})
	}
}

// TestHookIgnoresRemoteEnvironment: an agent CLI's hook, wired to its
// workspace by 'cowfs integrate', runs in an environment that may carry
// COWFS_REMOTE for the harness; it follows its workspace and exits 0,
// where an explicit --remote is refused (TestRemoteFlags).
func TestHookIgnoresRemoteEnvironment(t *testing.T) {
	t.Setenv(remoteEnv, "https://127.0.0.1:1")
	t.Setenv(tlsDirEnv, t.TempDir())
	code, err := runArgs(t, "-w", t.TempDir(), "hook", "claude-code", "Stop")
	if code != 0 || err != nil {
		t.Fatalf("exit %d, %v; want 0", code, err)
	}
}
