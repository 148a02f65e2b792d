package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/journal"
)

// The test binary is also cowfs: with cliEnv set it runs main, so each
// command below runs as a process of its own, as a user runs it.
const cliEnv = "COWFS_CLI_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cli runs cowfs with args and returns its stdout and exit code.
func cli(t *testing.T, env []string, args ...string) (string, int) {
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
	if code != 0 {
		t.Logf("cowfs %v: exit %d: %s", args, code, errOut.String())
	}
	return out.String(), code
}

// Every history command, run as a process against a workspace no daemon
// serves — a journal made here with the journal package, no mount, no
// root: the CLI opens it in-process (daemon.OpenOffline) and answers as
// a daemon would.
func TestCommandsWithoutDaemon(t *testing.T) {
	// Turn 1, as the mount would journal it: a file created.
	ws, env, _ := offlineTurn(t, "call-1", "msg-1", map[string][]byte{"old.txt": []byte("old\n")},
		&journal.Record{Kind: journal.KindCreate, Path: "new.txt", Type: syscall.S_IFREG}, nil,
		"new.txt", []byte("new\n"))

	w := []string{"-w", ws}
	decode := func(args []string, v any) {
		t.Helper()
		out, code := cli(t, env, append(append(w, args...), "--json")...)
		if code != 0 {
			t.Fatalf("cowfs %v: exit %d", args, code)
		}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("cowfs %v: not JSON: %q", args, out)
		}
	}
	var tl ctl.TurnList
	decode([]string{"log"}, &tl)
	if len(tl.Turns) != 1 || tl.Turns[0].ID != "call-1" || tl.Turns[0].State != ctl.StateClosed {
		t.Fatalf("log: %+v", tl.Turns)
	}
	var d ctl.TurnDetail
	decode([]string{"show", "call-1"}, &d)
	if len(d.Changes) != 1 || d.Changes[0].Path != "new.txt" || d.Changes[0].Kind != "created" {
		t.Errorf("show: %+v", d.Changes)
	}
	var df ctl.Diff
	decode([]string{"diff", "1"}, &df)
	if len(df.Files) != 1 || df.Files[0].Path != "new.txt" {
		t.Errorf("diff: %+v", df.Files)
	}
	if out, code := cli(t, env, append(w, "cat", "--at", "1", "old.txt")...); code != 0 || out != "old\n" {
		t.Errorf("cat --at 1 old.txt: %q, exit %d", out, code)
	}
	var res ctl.RollbackResult
	decode([]string{"rollback", "1", "--dry-run"}, &res)
	if !res.DryRun || res.Counts.Deleted != 1 {
		t.Errorf("rollback --dry-run: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err != nil {
		t.Fatalf("a dry run changed the workspace: %v", err)
	}
	decode([]string{"undo"}, &res)
	if res.Counts.Deleted != 1 || res.Marker == nil || res.Marker.Anchor != "msg-1" {
		t.Errorf("undo: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt after undo: %v", err)
	}
	var ml ctl.MarkerList
	decode([]string{"markers"}, &ml)
	if len(ml.Markers) != 1 || ml.Markers[0].Turn != 1 {
		t.Errorf("markers: %+v", ml.Markers)
	}
	decode([]string{"redo"}, &res)
	if b, err := os.ReadFile(filepath.Join(ws, "new.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("new.txt after redo: %q %v", b, err)
	}
	decode([]string{"rollback", "1", "--force"}, &res)
	if res.Counts.Deleted != 1 {
		t.Errorf("rollback --force: %+v", res)
	}
	decode([]string{"unrevert"}, &res)
	if !res.Unrevert {
		t.Errorf("unrevert: %+v", res)
	}
	// What needs the mount says so.
	if _, code := cli(t, env, append(w, "turn", "begin")...); code != 3 {
		t.Errorf("turn begin without a daemon: exit %d, want 3", code)
	}
}

// fsck reads back everything the journal holds, changes nothing, and
// names what it cannot read: here, pre-image content whose pack file
// was deleted.
func TestFsck(t *testing.T) {
	old := bytes.Repeat([]byte("old content\n"), 1000)
	ws, env, loc := offlineTurn(t, "", "", map[string][]byte{"f": old},
		&journal.Record{Kind: journal.KindData, Path: "f", Type: syscall.S_IFREG, Off: 0, Len: int64(len(old))}, bytes.NewReader(old),
		"f", []byte("new\n"))

	var r daemon.CheckReport
	out, code := cli(t, env, "-w", ws, "fsck", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Turns != 1 || r.Records < 1 || r.Content != int64(len(old)) || len(r.Problems) != 0 {
		t.Fatalf("fsck of a sound journal: exit %d, %s", code, out)
	}
	packs, _ := filepath.Glob(filepath.Join(loc.Journal(), "packs", "*"))
	if len(packs) == 0 {
		t.Fatalf("no pack files in %s", loc.Journal())
	}
	for _, p := range packs {
		os.Remove(p)
	}
	out, code = cli(t, env, "-w", ws, "fsck")
	if code != 1 || !bytes.Contains([]byte(out), []byte(`pre-image`)) {
		t.Errorf("fsck after the packs went: exit %d, %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f")); string(b) != "new\n" {
		t.Errorf("fsck changed the workspace: %q", b)
	}
}

// offlineTurn makes a workspace holding files, with a state root of its
// own and a journal of one turn (id, anchor) made as the mount makes
// one — rec journaled (with the pre-image src, for a data record), then
// the change: path written with content — and closed, as a daemon
// leaves it. It returns the workspace, the environment cli needs, and
// where the journal is.
func offlineTurn(t *testing.T, id, anchor string, files map[string][]byte, rec *journal.Record, src io.ReaderAt,
	path string, content []byte) (string, []string, daemon.Location) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	state := t.TempDir()
	t.Setenv("COWFS_STATE_DIR", state)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	must(err)
	for name, b := range files {
		must(os.WriteFile(filepath.Join(ws, name), b, 0o644))
	}
	loc, err := daemon.Locate(ws)
	must(err)
	must(os.MkdirAll(loc.Dir, 0o700))
	j, err := journal.Open(loc.Journal(), journal.Options{})
	must(err)
	_, err = j.BeginTurn(id, anchor, time.Now())
	must(err)
	g := j.Enter()
	must(j.Append(g, rec, src))
	must(os.WriteFile(filepath.Join(ws, path), content, 0o644))
	g.Leave()
	_, err = j.EndTurn(time.Now())
	must(err)
	must(j.Close())
	return ws, []string{"COWFS_STATE_DIR=" + state}, loc
}
