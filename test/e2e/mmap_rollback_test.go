package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/testenv"
)

// A process that keeps a shared writable mapping of a workspace file
// across turns (a database, a dev server) writes to it through pages the
// kernel writes back when it likes. These tests keep such a page dirty
// across a rollback or an unrevert and check that the file ends in a
// state that existed: the late write journaled as a change outside a
// turn (a conflict, skipped), or refused, never the rolled-back turn's
// bytes written back on top of the restored file.

// mapper is a python3 process mapping one file MAP_SHARED, driven line
// by line on its stdin.
type mapper struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	size int
}

// mapperScript answers each command with one line:
//
//	fill C     writes byte C over the whole mapping, msyncs: "ok"
//	poke C OFF writes byte C at OFF, leaves the page dirty: "ok"
//	read       "ok" and the mapping's bytes, run-length coded (C*N ...)
//	sync       msyncs: "ok", or "err" and the error
const mapperScript = `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, int(sys.argv[2]), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
print("mapped", flush=True)
for line in sys.stdin:
    cmd = line.split()
    try:
        if cmd[0] == "fill":
            m[:] = cmd[1].encode() * len(m)
            m.flush()
            print("ok", flush=True)
        elif cmd[0] == "poke":
            m[int(cmd[2])] = ord(cmd[1])
            print("ok", flush=True)
        elif cmd[0] == "read":
            b, runs, i = bytes(m), [], 0
            while i < len(b):
                j = i
                while j < len(b) and b[j] == b[i]:
                    j += 1
                runs.append("%s*%d" % (chr(b[i]), j - i))
                i = j
            print("ok " + " ".join(runs), flush=True)
        elif cmd[0] == "sync":
            m.flush()
            print("ok", flush=True)
    except OSError as e:
        print("err " + str(e), flush=True)
`

// startMapper maps path (size bytes) in a python3 process, ended by its
// pid when the test ends.
func startMapper(t *testing.T, path string, size int) *mapper {
	t.Helper()
	testenv.NeedTool(t, "python3") // keeps a shared mapping in another process
	cmd := exec.Command("python3", "-c", mapperScript, path, fmt.Sprint(size))
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &mapper{t: t, cmd: cmd, in: in, out: bufio.NewReader(out), size: size}
	// Registered after the workspace's cleanup, so it runs first: the
	// mapping must be gone before the unmount.
	t.Cleanup(func() {
		in.Close()
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	if line := m.line(); line != "mapped" {
		t.Fatalf("mapper: %q", line)
	}
	return m
}

func (m *mapper) line() string {
	m.t.Helper()
	s, err := m.out.ReadString('\n')
	if err != nil {
		m.t.Fatalf("mapper: %v (%q)", err, s)
	}
	return strings.TrimSpace(s)
}

// do sends a command and returns its answer.
func (m *mapper) do(format string, args ...any) string {
	m.t.Helper()
	if _, err := fmt.Fprintf(m.in, format+"\n", args...); err != nil {
		m.t.Fatal(err)
	}
	return m.line()
}

func (m *mapper) must(format string, args ...any) {
	m.t.Helper()
	if got := m.do(format, args...); got != "ok" {
		m.t.Fatalf("mapper %s: %q", fmt.Sprintf(format, args...), got)
	}
}

// runs codes b as the mapper's read does: "A*8192", "C*1 B*8191".
func runs(b []byte) string {
	var out []string
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && b[j] == b[i] {
			j++
		}
		out = append(out, fmt.Sprintf("%c*%d", b[i], j-i))
		i = j
	}
	return strings.Join(out, " ")
}

// fileRuns is the file's bytes as runs, read through the mount.
func (w *workspace) fileRuns(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.path(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	return runs(b)
}

// mappedTurn seeds f.bin with 8 KiB of A, maps it in a mapper and, in
// turn 1, writes B over it through the mapping. before, if set, runs
// before the mount.
func mappedTurn(t *testing.T, before func(w *workspace)) (*workspace, *mapper) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f.bin": strings.Repeat("A", 8192)})
	if before != nil {
		before(w)
	}
	w.mount()
	m := startMapper(t, w.path("f.bin"), 8192)
	w.cowfs("turn", "begin")
	m.must("fill B")
	w.cowfs("turn", "end")
	if d := w.turn("1"); len(d.Changes) != 1 || d.Changes[0].Path != "f.bin" {
		t.Fatalf("turn 1: %+v", d.Changes)
	}
	return w, m
}

// pathAction returns the report's entry for p.
func pathAction(res ctl.RollbackResult, p string) ctl.PathAction {
	for _, a := range res.Paths {
		if string(a.Path) == p {
			return a
		}
	}
	return ctl.PathAction{}
}

// A page dirtied after the turn, still dirty when the rollback starts,
// is written back before the rollback plans: journaled as a change
// outside a turn, by the process that maps the file, so the rollback
// skips the file as a conflict and leaves it as that process left it.
func TestRollbackWritesBackDirtyMappingsFirst(t *testing.T) {
	w, m := mappedTurn(t, nil)
	m.must("poke C 0")

	since := w.lastSeq()
	res := w.rollback("1")
	a := pathAction(res, "f.bin")
	if a.Action != ctl.ActionSkip || !strings.Contains(a.Reason, "outside a turn") || res.Counts.Restored != 0 {
		t.Errorf("rollback over a late write through a shared mapping: %+v (%+v)", res, res.Paths)
	}
	if got := w.fileRuns("f.bin"); got != "C*1 B*8191" {
		t.Errorf("f.bin after the rollback: %s, want C*1 B*8191 (the late write, kept)", got)
	}
	if got := m.do("read"); got != "ok C*1 B*8191" {
		t.Errorf("the mapping after the rollback: %q", got)
	}
	// The late write is journaled as what it is: a change outside a
	// turn, by the process that maps the file.
	var found bool
	for _, e := range w.events(since) {
		if e.Type == ctl.EventChange && e.Path == "f.bin" && e.Turn == 0 && e.Rollback == 0 {
			found = true
			if e.Pid != uint32(m.cmd.Process.Pid) {
				t.Errorf("the late write is attributed to pid %d (%s), want the mapper, %d", e.Pid, e.Command, m.cmd.Process.Pid)
			}
		}
	}
	if !found {
		t.Errorf("no event for the late write: %+v", w.events(since))
	}
	var l ctl.TurnList
	w.cowfsJSON(&l, "log")
	if l.OutsideTurns != 1 {
		t.Errorf("cowfs log: %d paths changed outside turns, want 1 (f.bin)", l.OutsideTurns)
	}

	// Forced, the rollback restores over it; the page the kernel
	// wrote back is clean, so nothing lands on top afterwards.
	w.cowfs("unrevert")
	res = w.rollback("1", "--force")
	if res.Counts.Restored != 1 || !res.Complete {
		t.Errorf("forced rollback: %+v", res)
	}
	m.must("sync")
	if got := w.fileRuns("f.bin"); got != "A*8192" {
		t.Errorf("f.bin after a forced rollback: %s, want A*8192", got)
	}
	if got := m.do("read"); got != "ok A*8192" {
		t.Errorf("the mapping after a forced rollback: %q", got)
	}
}

// backingRuns is the file's bytes as runs, read from the backing
// directory (the mount is elsewhere: mappedTurn's before sets w.mnt).
func (w *workspace) backingRuns(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, rel))
	if err != nil {
		w.t.Fatal(err)
	}
	return runs(b)
}

// mountElsewhere mounts the view beside the backing directory, so a
// test can read the backing file itself.
func mountElsewhere(w *workspace) {
	w.mnt = filepath.Join(filepath.Dir(w.dir), "view")
	if err := os.Mkdir(w.mnt, 0o755); err != nil {
		w.t.Fatal(err)
	}
}

// pausedRun starts `cowfs ARGS --json`, waits until the daemon pauses
// it after the step p stops at, runs during, lets it go on and returns
// its result. p is ready for the next run again.
func (w *workspace) pausedRun(p *rollbackPause, during func(), args ...string) ctl.RollbackResult {
	w.t.Helper()
	cmd := exec.Command(cowfsBin, append([]string{"-w", w.mnt}, append(args, "--json")...)...)
	cmd.Env = w.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	p.wait()
	during()
	p.resume()
	err := cmd.Wait()
	os.Remove(filepath.Join(p.dir, "paused"))
	os.Remove(filepath.Join(p.dir, "resume"))
	if err != nil {
		w.t.Fatalf("cowfs %v: %v: %s", args, err, errOut.String())
	}
	var res ctl.RollbackResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		w.t.Fatalf("cowfs %v: %v: %q", args, err, out.String())
	}
	return res
}

// A page written to through a mapping after the rollback's flush — here
// while the rollback is paused right after it restored the file — was
// cached before the restore: written back, it would put the rolled-back
// turn's bytes over the restored file. Its writeback is refused, the
// writer gets EIO, the file stays as restored, and the report says so.
// The same holds for an unrevert.
func TestRollbackRefusesPagesCachedBeforeTheRestore(t *testing.T) {
	var p *rollbackPause
	w, m := mappedTurn(t, func(w *workspace) {
		mountElsewhere(w)
		p = w.pauseAt(1)
	})
	pid := fmt.Sprint(m.cmd.Process.Pid)

	res := w.pausedRun(p, func() {
		if got := w.backingRuns("f.bin"); got != "A*8192" {
			t.Fatalf("f.bin after the rollback's first step: %s, want it restored (A*8192)", got)
		}
		// The page is mapped, clean and holds B: writing to it tells
		// nobody.
		m.must("poke D 0")
	}, "rollback", "1")
	a := pathAction(res, "f.bin")
	if !res.Complete || a.Action != ctl.ActionRestore || !strings.Contains(a.Note, "refused") || !strings.Contains(a.Note, pid) {
		t.Errorf("rollback with a page dirtied during it: %+v", res.Paths)
	}
	if got := w.backingRuns("f.bin"); got != "A*8192" {
		t.Errorf("f.bin after the rollback: %s, want A*8192 (restored, the stale page refused)", got)
	}
	if got := m.do("sync"); !strings.HasPrefix(got, "err") {
		t.Errorf("msync after the writeback was refused: %q, want an error", got)
	}
	if got := m.do("read"); got != "ok A*8192" {
		t.Errorf("the mapping after the rollback: %q", got)
	}
	if got := w.fileRuns("f.bin"); got != "A*8192" {
		t.Errorf("f.bin through the mount after the rollback: %s", got)
	}
	// A refused write leaves no record.
	for _, e := range w.events(0) {
		if e.Type == ctl.EventChange && e.Path == "f.bin" && e.Turn == 0 && e.Rollback == 0 {
			t.Errorf("the refused write was journaled: %+v", e)
		}
	}

	// The unrevert: the mapping holds the restored bytes (read after the
	// rollback), the unrevert puts B back, and a write to the page
	// during it is refused as well.
	res = w.pausedRun(p, func() {
		if got := w.backingRuns("f.bin"); got != "B*8192" {
			t.Fatalf("f.bin after the unrevert's first step: %s, want B*8192", got)
		}
		m.must("poke E 0")
	}, "unrevert")
	a = pathAction(res, "f.bin")
	if !res.Complete || a.Action != ctl.ActionRestore || !strings.Contains(a.Note, "refused") {
		t.Errorf("unrevert with a page dirtied during it: %+v", res.Paths)
	}
	if got := w.backingRuns("f.bin"); got != "B*8192" {
		t.Errorf("f.bin after the unrevert: %s, want B*8192", got)
	}
	if got := m.do("sync"); !strings.HasPrefix(got, "err") {
		t.Errorf("msync after the writeback was refused: %q, want an error", got)
	}
	if got := m.do("read"); got != "ok B*8192" {
		t.Errorf("the mapping after the unrevert: %q", got)
	}

	// A page read after the restore holds the restored bytes: written
	// to and written back afterwards, it is an ordinary change outside
	// a turn.
	m.must("poke F 0")
	m.must("sync")
	if got := w.backingRuns("f.bin"); got != "F*1 B*8191" {
		t.Errorf("f.bin after a write through the mapping after the unrevert: %s", got)
	}
}

// A page dirtied after a rollback, still dirty when the unrevert starts,
// is written back before the unrevert plans: a change made since the
// rollback, so the unrevert skips the file.
func TestUnrevertWritesBackDirtyMappingsFirst(t *testing.T) {
	w, m := mappedTurn(t, nil)
	if res := w.rollback("1"); res.Counts.Restored != 1 {
		t.Fatalf("rollback: %+v", res)
	}
	if got := m.do("read"); got != "ok A*8192" {
		t.Fatalf("the mapping after the rollback: %q", got)
	}
	m.must("poke C 0")
	var res ctl.RollbackResult
	w.cowfsJSON(&res, "unrevert")
	if a := pathAction(res, "f.bin"); a.Action != ctl.ActionSkip || res.Counts.Restored != 0 {
		t.Errorf("unrevert over a late write through a shared mapping: %+v", res.Paths)
	}
	if got := w.fileRuns("f.bin"); got != "C*1 A*8191" {
		t.Errorf("f.bin after the unrevert: %s, want C*1 A*8191 (the late write, kept)", got)
	}
}

// A file mapped and written to for the first time since the last flush
// (the kernel has never written it back, so nothing marks it as mapped)
// is found among the processes' mappings and written back before the
// rollback plans: a conflict, skipped, the late write kept.
func TestRollbackWritesBackFirstMappedFilesFirst(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f.bin": strings.Repeat("A", 8192)})
	w.mount()
	m := startMapper(t, w.path("f.bin"), 8192)
	w.cowfs("turn", "begin")
	w.sh("printf %8192s '' | tr ' ' B > f.bin")
	w.cowfs("turn", "end")
	m.must("poke C 0")

	res := w.rollback("1")
	if a := pathAction(res, "f.bin"); a.Action != ctl.ActionSkip || !strings.Contains(a.Reason, "outside a turn") {
		t.Errorf("rollback over a first write through a mapping: %+v", res.Paths)
	}
	if got := w.fileRuns("f.bin"); got != "C*1 B*8191" {
		t.Errorf("f.bin after the rollback: %s, want C*1 B*8191 (the late write, kept)", got)
	}
	if got := m.do("read"); got != "ok C*1 B*8191" {
		t.Errorf("the mapping after the rollback: %q", got)
	}
}
