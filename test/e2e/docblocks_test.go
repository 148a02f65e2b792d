package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The documents' command blocks, run as a reader runs them (docs_test.go
// says which, against what). This file extracts the blocks and runs
// them in order in one shell session: each block a bash process of its
// own (so a failure is its block's, with set -e -o pipefail), the
// working directory and the variables earlier blocks set carried over.

// A docBlock is a ```sh block of a document.
type docBlock struct {
	doc   string
	line  int      // the line number of its first line
	lines []string // its lines, as written
}

// docFence is a fence that opens a code block, and its language.
var docFence = regexp.MustCompile("^\\s*```\\s*(\\S*)")

// shBlocks returns the ```sh blocks of the document at path (named doc
// in reports), in order. Every code block must be sh (commands) or json
// (replies): a block of another kind would slip through unrun.
func shBlocks(path, doc string) ([]docBlock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var blocks []docBlock
	var cur *docBlock
	for i, l := range strings.Split(string(b), "\n") {
		m := docFence.FindStringSubmatch(l)
		switch {
		case m == nil:
			if cur != nil {
				cur.lines = append(cur.lines, l)
			}
		case cur != nil: // the closing fence
			if cur.doc != "" {
				blocks = append(blocks, *cur)
			}
			cur = nil
		case m[1] == "sh":
			cur = &docBlock{doc: doc, line: i + 2}
		case m[1] == "json":
			cur = &docBlock{} // a reply: not run
		default:
			return nil, fmt.Errorf("%s:%d: a ```%s block: commands go in ```sh blocks (which TestDocs runs), replies in ```json", doc, i+1, m[1])
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: a code block that never closes", doc)
	}
	return blocks, nil
}

// text is the block as bash runs it.
func (b docBlock) text() string { return strings.Join(b.lines, "\n") }

// docVar is a shell variable a block assigns (S=$(…)), which later
// blocks of the document use.
var docVar = regexp.MustCompile(`(?m)^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=`)

// A docSession runs a document's blocks in order, as one reader's shell.
type docSession struct {
	env   []string
	state string   // where the session keeps its working directory and variables
	vars  []string // the variables blocks have assigned so far
	jobs  []*docJob
}

func newDocSession(t *testing.T, env []string, dir string) *docSession {
	t.Helper()
	s := &docSession{env: env, state: t.TempDir()}
	if err := os.WriteFile(filepath.Join(s.state, "cwd"), []byte(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.state, "vars"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A job the document left running is ended here, on failure too.
	t.Cleanup(func() {
		for _, j := range s.jobs {
			j.stop()
		}
	})
	return s
}

// script is text with the session's state around it: the working
// directory and variables of the blocks before, and, if save, saved
// again on exit for the blocks after.
func (s *docSession) script(text string, save bool) string {
	for _, m := range docVar.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(s.vars, m[1]) {
			s.vars = append(s.vars, m[1])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "set -e -o pipefail\ncd \"$(cat %q)\"\n. %q\n",
		filepath.Join(s.state, "cwd"), filepath.Join(s.state, "vars"))
	if save && len(s.vars) > 0 { // declare -p with no names would print every variable
		fmt.Fprintf(&b, "trap 'set +x; pwd > %q; declare -p %s > %q 2>/dev/null' EXIT\n",
			filepath.Join(s.state, "cwd"), strings.Join(s.vars, " "), filepath.Join(s.state, "vars"))
	} else if save {
		fmt.Fprintf(&b, "trap 'set +x; pwd > %q' EXIT\n", filepath.Join(s.state, "cwd"))
	}
	fmt.Fprintf(&b, "set -x\n%s\n", text)
	return b.String()
}

func (s *docSession) command(ctx context.Context, text string, save bool) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", s.script(text, save))
	cmd.Env = s.env
	// Its own process group, so what it starts and leaves ends with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs text to its end, at most timeout, and returns what it
// printed (standard output and error, with bash's trace of each command).
func (s *docSession) run(text string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := s.command(ctx, text, true)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after %v: %w", timeout, err)
	}
	return string(out), err
}

// A docJob is a command that runs until something stops it (a daemon in
// the foreground), started in the background.
type docJob struct {
	text string
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// start starts text in the background and waits until ready reports
// true; it fails if text ends first.
func (s *docSession) start(text string, ready func() bool, timeout time.Duration) (*docJob, error) {
	j := &docJob{text: text, done: make(chan struct{})}
	// A job outlives the blocks after it: it must not save the state
	// they set when it ends.
	j.cmd = s.command(context.Background(), text, false)
	j.cmd.Stdout, j.cmd.Stderr = &j.out, &j.out
	if err := j.cmd.Start(); err != nil {
		return nil, err
	}
	s.jobs = append(s.jobs, j)
	go func() { j.err = j.cmd.Wait(); close(j.done) }()
	for end := time.Now().Add(timeout); !ready(); time.Sleep(50 * time.Millisecond) {
		select {
		case <-j.done:
			return j, fmt.Errorf("ended before it was ready: %v", j.err)
		default:
		}
		if time.Now().After(end) {
			return j, fmt.Errorf("not ready after %v", timeout)
		}
	}
	return j, nil
}

// wait waits up to d for the job to end (the document stops it) and
// returns how it ended.
func (j *docJob) wait(d time.Duration) error {
	select {
	case <-j.done:
		return j.err
	case <-time.After(d):
		return errors.New("still running: nothing in the document stopped it")
	}
}

// stop ends the job's process group, if it still runs.
func (j *docJob) stop() {
	select {
	case <-j.done:
	default:
		syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-j.done
	}
}
