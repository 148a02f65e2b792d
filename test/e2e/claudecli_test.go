package e2e

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/test/agents/anthropicapi"
	"github.com/cowfs/cowfs/test/testenv"
)

// The real Claude Code CLI, installed by npm from the lockfile in
// test/agents/claude-code into a cache directory that later runs reuse,
// and run against the Messages API mock.

var claudeOnce struct {
	sync.Once
	bin string
	err error
}

// claudeCLI returns the path of the pinned Claude Code binary,
// installing it on first use. It skips the test where npm is absent.
func claudeCLI(t *testing.T) string {
	t.Helper()
	npm := testenv.NeedTool(t, "npm")
	claudeOnce.Do(func() { claudeOnce.bin, claudeOnce.err = installClaude(npm) })
	if claudeOnce.err != nil {
		t.Fatalf("installing Claude Code: %v", claudeOnce.err)
	}
	return claudeOnce.bin
}

func installClaude(npm string) (string, error) {
	src := filepath.Join("..", "agents", "claude-code")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return "", err
	}
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cowfs-test", "claude-code-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// One installer at a time across test processes.
	lf, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	done := filepath.Join(dir, ".installed")
	if _, err := os.Stat(done); err != nil {
		for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				return "", err
			}
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", errors.New("npm ci: " + err.Error() + ": " + string(out))
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			return "", err
		}
	}
	// The wrapper package's postinstall copies the platform package's
	// binary over its placeholder; where scripts did not run, the
	// platform package's binary is the same program.
	for _, p := range []string{
		filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe"),
		filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"),
	} {
		if f, err := elf.Open(p); err == nil {
			f.Close()
			return p, nil
		}
	}
	return "", errors.New("no native claude binary in " + dir + " (is this linux-x64?)")
}

// claudeEnv is the environment Claude Code runs in: a home of its own,
// the mock as its API, nothing beyond loopback (the mock is also the
// proxy for anything else, and refuses it), no updates or telemetry.
func claudeEnv(w *workspace, home string, api *anthropicapi.Server) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_") || strings.HasSuffix(strings.ToUpper(k), "_PROXY") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"COWFS_STATE_DIR="+w.state, // for the hooks to find the daemon
		"HOME="+home,
		"ANTHROPIC_BASE_URL="+api.URL,
		"ANTHROPIC_API_KEY=dummy",
		"HTTPS_PROXY="+api.URL, "HTTP_PROXY="+api.URL, "NO_PROXY=127.0.0.1,localhost",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		// npm, which the scripted tool calls run, checks for updates.
		"npm_config_update_notifier=false", "npm_config_offline=true",
	)
}

// claudeRun is one run of claude -p.
type claudeRun struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
}

// startClaude starts claude with args (and -p PROMPT) in the mounted
// workspace, in a process group of its own.
func startClaude(t *testing.T, w *workspace, bin string, env []string, prompt string, args ...string) *claudeRun {
	t.Helper()
	args = append(args, "--permission-mode", "acceptEdits", "--allowedTools", "Bash Write Edit Read",
		"--output-format", "json", "-p", prompt)
	r := &claudeRun{cmd: exec.Command(bin, args...)}
	r.cmd.Dir = w.mnt
	r.cmd.Env = env
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := r.cmd.Process.Pid
	// What claude started and left (a tool's command) goes with it.
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	return r
}

// wait waits for claude to exit, at most two minutes (then it is
// killed), and returns its exit code.
func (r *claudeRun) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("claude did not finish in two minutes\nstdout: %s\nstderr: %s", r.stdout.String(), r.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// claudeResult is what cowfs reads of claude -p --output-format json.
type claudeResult struct {
	SessionID string `json:"session_id"`
	Result    string `json:"result"`
	IsError   bool   `json:"is_error"`
}

// claude runs claude -p PROMPT to its end and fails the test unless it
// succeeds.
func claude(t *testing.T, w *workspace, bin string, env []string, prompt string, args ...string) claudeResult {
	t.Helper()
	r := startClaude(t, w, bin, env, prompt, args...)
	code := r.wait(t)
	var res claudeResult
	if err := json.Unmarshal(r.stdout.Bytes(), &res); code != 0 || err != nil || res.IsError {
		t.Fatalf("claude -p %q: exit %d (%v)\nstdout: %s\nstderr: %s", prompt, code, err, r.stdout.String(), r.stderr.String())
	}
	return res
}

// apiMessages returns the messages of each Messages API request the
// mock received whose newest user text holds marker, in order.
func apiMessages(api *anthropicapi.Server, marker string) []string {
	var out []string
	for _, r := range api.Requests() {
		if r.Path != "/v1/messages" {
			continue
		}
		var req struct {
			Messages json.RawMessage `json:"messages"`
		}
		if json.Unmarshal(r.Body, &req) == nil && bytes.Contains(req.Messages, []byte(marker)) {
			out = append(out, string(req.Messages))
		}
	}
	return out
}

// lastEntry returns the uuid of the newest entry of a transcript.
func lastEntry(t *testing.T, transcript string) string {
	t.Helper()
	b, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e struct {
			UUID        string `json:"uuid"`
			IsSidechain bool   `json:"isSidechain"`
		}
		if json.Unmarshal(line, &e) == nil && e.UUID != "" && !e.IsSidechain {
			last = e.UUID
		}
	}
	return last
}
