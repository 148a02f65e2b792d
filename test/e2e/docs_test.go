package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// TestDocs: the documents cannot rot. Every ```sh block of README.md and
// docs/api.md runs, in order, against a real daemon on a fresh workspace,
// as a reader would run it (the real cowfs binary first on PATH, curl
// against the socket and over TLS); a block that errs fails the test,
// reported with its document, line, text and output. The placeholders a
// reader fills in are replaced by the small tables below; every line of
// every block runs unless docSkips names it, with its reason, and an
// entry of these tables that matches no line any more fails too.
// (cmd/cowfs/docs_test.go checks the command lines and flags of every
// document statically.)
func TestDocs(t *testing.T) {
	testenv.NeedFUSE(t)
	for _, tool := range []string{"bash", "curl", "jq", "npm", "timeout"} {
		testenv.NeedTool(t, tool)
	}
	t.Run("README.md", testReadmeBlocks)
	t.Run("api.md", testAPIBlocks)
}

// docSkips are the lines of the documents' blocks that do not run here,
// and why. Each must match a line (trimmed) of its document's blocks.
var docSkips = []docSkip{
	{"README.md", "sh test/all.sh", "it is this suite: it would run this test again, and everything else"},
}

// docTimed are lines that run until the client stops them, as a reader
// would with Ctrl-C: they run for two seconds, and must not fail before.
var docTimed = []docSkip{
	{"docs/api.md", "curl -sN --unix-socket $S 'http://cowfs/v1/events?since=0&follow=1'", "follow=1 streams events until the client goes"},
}

// planFor returns a plan for doc with its entries of docSkips and
// docTimed.
func planFor(doc string) docPlan {
	p := docPlan{doc: doc}
	for _, sk := range docSkips {
		if sk.doc == doc {
			p.skip = append(p.skip, sk)
		}
	}
	for _, tm := range docTimed {
		if tm.doc == doc {
			p.timed = append(p.timed, tm.line)
		}
	}
	return p
}

// reportDoc runs the document's blocks as p says and fails t for each
// problem.
func reportDoc(t *testing.T, p docPlan, env []string) {
	t.Helper()
	for _, problem := range runDoc(t, p, env) {
		t.Error(problem)
	}
}

// docBin returns a directory to put first on PATH: the real cowfs binary,
// and curl with --fail-with-body, so that an error reply (4xx, 5xx) fails
// the command as it would fail a reader's script (curl -s alone exits 0).
func docBin(t *testing.T) string {
	t.Helper()
	curl := testenv.NeedTool(t, "curl")
	bin := t.TempDir()
	// A copy, not a link: README's go build -o writes over it.
	src, err := os.Open(cowfsBin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(bin, "cowfs"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(bin, "curl"), fmt.Sprintf("exec %q --fail-with-body \"$@\"\n", curl))
	return bin
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// docEnv is the environment the blocks run in: bin first on PATH, the
// workspace's state directory, a home of their own (claude, npm and
// cowfs integrate write there), and nothing beyond loopback — Go's build
// uses the module cache offline, npm runs offline, and claude's traffic
// goes to a proxy that is not there.
func docEnv(t *testing.T, w *workspace, bin string) []string {
	t.Helper()
	goenv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	gv := strings.Split(strings.TrimSpace(string(goenv)), "\n")
	if len(gv) != 3 {
		t.Fatalf("go env: %q", goenv)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_") || strings.HasPrefix(k, "COWFS_") ||
			strings.HasSuffix(strings.ToUpper(k), "_PROXY") || k == "HOME" || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+t.TempDir(),
		"COWFS_STATE_DIR="+w.state,
		"GOCACHE="+gv[0], "GOMODCACHE="+gv[1], "GOPATH="+gv[2], "GOPROXY=off", "GOTOOLCHAIN=local",
		"npm_config_offline=true", "npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost,cowfs",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
	)
}

// stopDaemonAfter stops, when the test ends, a daemon the document's
// blocks started for w and left running (the test failed before the
// document stopped it).
func stopDaemonAfter(t *testing.T, w *workspace) {
	t.Cleanup(func() {
		out, _, code := w.run("status", "--json")
		if code != 0 || !strings.Contains(out, `"pid"`) {
			return
		}
		w.pids = append(w.pids, w.status().Pid) // w.cleanup unmounts and waits for it
	})
}

// testReadmeBlocks: README's walkthrough, from the build and the mount
// in the foreground to the purge, then the integrations and the sandbox.
func testReadmeBlocks(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{
		"main.go":      "package main\n\n// foo\nfunc main() {}\n", // sed -i s/foo/bar/ main.go
		"build/out":    "old build\n",                              // rm -rf build
		"package.json": `{"name": "proj", "version": "1.0.0", "private": true}` + "\n",
	})
	stopDaemonAfter(t, w)
	bin := docBin(t)
	// my-agent stands for the reader's agent: it changes the workspace.
	writeScript(t, filepath.Join(bin, "my-agent"), "echo \"$*\" > fixed.txt\n")
	// claude mcp add: the real Claude Code CLI the other tests drive.
	if err := os.Symlink(claudeCLI(t), filepath.Join(bin, "claude")); err != nil {
		t.Fatal(err)
	}
	p := planFor("README.md")
	p.dir = repoRoot(t)
	p.replace = []docReplace{
		{"/usr/local/bin/cowfs", filepath.Join(bin, "cowfs"), "the build goes first on the test's PATH, not over the system's cowfs"},
		{"/path/to/workspace", w.dir, "the reader's workspace"},
		{"~/proj", w.dir, "the reader's workspace"},
	}
	p.background = []docBackground{
		// cowfs mount in the foreground, until the walkthrough's umount;
		// ready once its socket answers (the mount comes first).
		{"go build -o /usr/local/bin/cowfs ./cmd/cowfs && cowfs mount /path/to/workspace", func() bool {
			_, _, code := w.run("status")
			return mounted(w.dir) && code == 0
		}},
	}
	reportDoc(t, p, docEnv(t, w, bin))
}

// testAPIBlocks: api.md's curl examples, in order, against a daemon that
// also listens over mutual TLS, from the status to the purge.
func testAPIBlocks(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"main.go": "one\ntwo\nthree\n"})
	stopDaemonAfter(t, w)
	d := newTLSDirs(t)
	url := w.mountRemote(d)
	bin := docBin(t)
	p := planFor("docs/api.md")
	p.dir = t.TempDir()
	p.replace = []docReplace{
		{"/src/myrepo", w.dir, "the reader's workspace"},
		{"https://127.0.0.1:8443", url, "the daemon's --listen address"},
		{"client/", d.client + "/", "the client's TLS directory"},
		{"--tls-dir client", "--tls-dir " + d.client, "the client's TLS directory"},
	}
	reportDoc(t, p, docEnv(t, w, bin))
}

// repoRoot is the repository's root, where README's go build runs.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}
