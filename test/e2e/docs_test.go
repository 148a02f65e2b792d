package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cowfs/cowfs/test/testenv"
)

// TestDocs: the documents cannot rot. Every ```sh block of README.md and
// docs/api.md runs, in order, against a real daemon on a fresh workspace,
// as a reader would run it (the real cowfs binary first on PATH, curl
// against the socket and over TLS); a block that errs fails the test,
// reported with its document, line, text and output. The placeholders a
// reader fills in are replaced by the small tables below, and what cannot
// run here is named in docSkips with its reason; a block line that is
// neither run nor skipped, or an entry that matches no line, fails too.
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
var docSkips = []struct{ doc, line, why string }{
	{"README.md", "sh test/all.sh", "it is this suite: it would run this test again, and everything else"},
}

// docTimed are lines that run until the client stops them, as a reader
// would with Ctrl-C: they run for two seconds, and must not fail before.
var docTimed = []struct{ doc, line string }{
	{"docs/api.md", "curl -sN --unix-socket $S 'http://cowfs/v1/events?since=0&follow=1'"},
}

// A docBackground line runs until a later block stops it (a daemon in the
// foreground): it runs in the background, the blocks after it once ready
// says so, and it must have ended well by the end of the document.
type docBackground struct {
	line  string
	ready func() bool
}

// A docReplace is a placeholder a reader fills in (old), what the test
// puts there, and why.
type docReplace struct{ old, new, why string }

// docPlan is how a document's blocks run here.
type docPlan struct {
	doc        string // relative to the repository root
	dir        string // the working directory the first block starts in
	replace    []docReplace
	background []docBackground
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
	runDoc(t, docPlan{
		doc: "README.md",
		dir: repoRoot(t),
		replace: []docReplace{
			{"/usr/local/bin/cowfs", filepath.Join(bin, "cowfs"), "the build goes first on the test's PATH, not over the system's cowfs"},
			{"/path/to/workspace", w.dir, "the reader's workspace"},
			{"~/proj", w.dir, "the reader's workspace"},
		},
		background: []docBackground{
			// cowfs mount in the foreground, until the walkthrough's umount;
			// ready once its socket answers (the mount comes first).
			{"go build -o /usr/local/bin/cowfs ./cmd/cowfs && cowfs mount /path/to/workspace", func() bool {
				_, _, code := w.run("status")
				return mounted(w.dir) && code == 0
			}},
		},
	}, docEnv(t, w, bin))
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
	runDoc(t, docPlan{
		doc: "docs/api.md",
		dir: t.TempDir(),
		replace: []docReplace{
			{"/src/myrepo", w.dir, "the reader's workspace"},
			{"https://127.0.0.1:8443", url, "the daemon's --listen address"},
			{"client/", d.client + "/", "the client's TLS directory"},
			{"--tls-dir client", "--tls-dir " + d.client, "the client's TLS directory"},
		},
	}, docEnv(t, w, bin))
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

// runDoc runs the document's ```sh blocks in order in one session and
// fails t for each block that errs.
func runDoc(t *testing.T, p docPlan, env []string) {
	t.Helper()
	blocks := shBlocks(t, filepath.Join(repoRoot(t), p.doc), p.doc)
	if len(blocks) == 0 {
		t.Fatalf("%s has no ```sh blocks: the extraction is broken", p.doc)
	}
	s := newDocSession(t, env, p.dir)
	used := map[string]bool{} // the table entries that matched a line
	replace := func(text string) string {
		for _, r := range p.replace {
			if strings.Contains(text, r.old) {
				used["replace "+r.old] = true
				text = strings.ReplaceAll(text, r.old, r.new)
			}
		}
		return text
	}
	type job struct {
		b docBlock
		j *docJob
	}
	var jobs []job
	for _, b := range blocks {
		var pending []string // lines to run before the next background one
		fail := func(out string, err error) {
			t.Errorf("%s:%d: the block failed: %v\n$ %s\n%s", b.doc, b.line, err, strings.ReplaceAll(replace(b.text()), "\n", "\n$ "), out)
		}
		flush := func() bool {
			text := replace(strings.Join(pending, "\n"))
			pending = nil
			if strings.TrimSpace(text) == "" {
				return true
			}
			out, err := s.run(text, 5*time.Minute)
			if err != nil {
				fail(out, err)
				return false
			}
			return true
		}
		ok, skipped := true, 0
	lines:
		for _, l := range b.lines {
			line := strings.TrimSpace(l)
			for _, sk := range docSkips {
				if sk.doc == p.doc && sk.line == line {
					used["skip "+line] = true
					pending = append(pending, "# skipped here: "+sk.why)
					skipped++
					continue lines
				}
			}
			for _, tm := range docTimed {
				if tm.doc == p.doc && tm.line == line {
					used["timed "+line] = true
					// The newline ends a comment the line may have.
					pending = append(pending, "{ timeout 2 "+l+"\n} || [ $? -eq 124 ]")
					continue lines
				}
			}
			for _, bg := range p.background {
				if bg.line == line {
					used["background "+line] = true
					if ok = flush(); !ok {
						break lines
					}
					j, err := s.start(replace(l), bg.ready, 5*time.Minute)
					if err != nil {
						out := ""
						if j != nil {
							j.stop()
							out = j.out.String()
						}
						fail(out, err)
						ok = false
						break lines
					}
					jobs = append(jobs, job{b, j})
					continue lines
				}
			}
			pending = append(pending, l)
		}
		if ok && flush() {
			t.Logf("%s:%d: ran (%d of its lines skipped)", b.doc, b.line, skipped)
		}
	}
	for _, j := range jobs {
		if err := j.j.wait(30 * time.Second); err != nil {
			t.Errorf("%s:%d: %q, run in the background, did not end well: %v\n%s", j.b.doc, j.b.line, j.j.text, err, j.j.out.String())
		}
	}
	// Tables that name what is no longer there would skip or fill in
	// nothing while claiming to.
	for _, r := range p.replace {
		if !used["replace "+r.old] {
			t.Errorf("%s: the placeholder %q (%s) is in no ```sh block any more", p.doc, r.old, r.why)
		}
	}
	for _, sk := range docSkips {
		if sk.doc == p.doc && !used["skip "+sk.line] {
			t.Errorf("%s: the skipped line %q is in no ```sh block any more", p.doc, sk.line)
		}
	}
	for _, tm := range docTimed {
		if tm.doc == p.doc && !used["timed "+tm.line] {
			t.Errorf("%s: the streaming line %q is in no ```sh block any more", p.doc, tm.line)
		}
	}
	for _, bg := range p.background {
		if !used["background "+bg.line] {
			t.Errorf("%s: the background line %q is in no ```sh block any more", p.doc, bg.line)
		}
	}
}
