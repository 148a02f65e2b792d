package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/journal"
)

// history is a workspace with a journal made as the mount makes one,
// and no daemon: the commands under test open it in-process. Turns,
// steps and changes are added one call at a time; close it before
// running a command.
type history struct {
	t   *testing.T
	ws  string
	env []string
	loc daemon.Location
	j   *journal.Journal
}

func newHistory(t *testing.T) *history {
	t.Helper()
	state := t.TempDir()
	t.Setenv("COWFS_STATE_DIR", state)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	loc, err := daemon.Locate(ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(loc.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(loc.Journal(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &history{t: t, ws: ws, env: []string{"COWFS_STATE_DIR=" + state}, loc: loc, j: j}
	t.Cleanup(func() {
		if h.j != nil {
			h.j.Close()
		}
	})
	return h
}

func (h *history) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// begin begins a turn; end ends it.
func (h *history) begin(id, anchor string) {
	h.t.Helper()
	_, err := h.j.BeginTurn(id, anchor, time.Now())
	h.must(err)
}

func (h *history) end() {
	h.t.Helper()
	_, err := h.j.EndTurn(time.Now())
	h.must(err)
}

// step begins a step of the open turn.
func (h *history) step(id, name string) {
	h.t.Helper()
	_, err := h.j.BeginStep(id, name)
	h.must(err)
}

// create journals the creation of path by caller, and creates it.
func (h *history) create(path string, caller journal.Caller) {
	h.t.Helper()
	h.createBy(path, caller, false)
}

// createBy is create, by a process outside the turn's agent if
// notAgent.
func (h *history) createBy(path string, caller journal.Caller, notAgent bool) {
	h.t.Helper()
	g := h.j.Enter()
	rec := &journal.Record{Kind: journal.KindCreate, Path: path, Type: syscall.S_IFREG, Caller: caller, NotAgent: notAgent}
	h.must(h.j.Append(g, rec, nil))
	h.must(os.WriteFile(filepath.Join(h.ws, path), []byte(path+"\n"), 0o644))
	g.Leave()
}

// close closes the journal, as a daemon leaves it.
func (h *history) close() {
	h.t.Helper()
	h.must(h.j.Close())
	h.j = nil
}

// cowfs runs the CLI on the workspace and returns its stdout, stderr
// and exit code.
func (h *history) cowfs(args ...string) (string, string, int) {
	h.t.Helper()
	return cliAll(h.t, h.env, append([]string{"-w", h.ws}, args...)...)
}

// cliAll runs cowfs with args as a process and returns its stdout,
// stderr and exit code.
func cliAll(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), cliEnv+"=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("cowfs %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}
