package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

// show lists the step each change was made in, and show --steps lists
// the steps (tool call id and name) in order, each with its paths.
func TestShowSteps(t *testing.T) {
	h := newHistory(t)
	sh := journal.Caller{Pid: 100, Comm: "sh"}
	h.begin("0f8fad5b-d9cb-469f-a165-708677289501", "")
	h.create("before.txt", sh)
	h.step("toolu_01XFDUDYJgAACzvnptvVoYEL", "Bash")
	h.create("a.txt", sh)
	h.create("b.txt", sh)
	h.step("toolu_02Q8mV7Jc1b2", "Write")
	h.create("c.txt", sh)
	h.createBy("editor.txt", journal.Caller{Pid: 200, Comm: "vim"}, true)
	h.end()
	h.close()

	out, _, code := h.cowfs("show", "1")
	if code != 0 {
		t.Fatalf("show 1: exit %d", code)
	}
	for _, want := range []string{
		`(?m)^  created\s+a\.txt\s+0 B\s+toolu_01…VoYEL\s+sh pid 100`,
		`(?m)^  created\s+c\.txt\s+0 B\s+toolu_02…Jc1b2\s+sh pid 100`,
		`(?m)^  created\s+before\.txt\s+0 B\s+-\s+sh pid 100`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("show 1 does not match %s:\n%s", want, out)
		}
	}

	out, _, code = h.cowfs("show", "1", "--steps")
	if code != 0 {
		t.Fatalf("show 1 --steps: exit %d", code)
	}
	want := regexp.MustCompile(`(?s)^turn 1: 3 steps
before the first step: 1 path changed
  created  before\.txt .*
step toolu_01XFDUDYJgAACzvnptvVoYEL \(Bash\), began [-0-9: ]+: 2 paths changed
  created  a\.txt .*
  created  b\.txt .*
step toolu_02Q8mV7Jc1b2 \(Write\), began [-0-9: ]+: 1 path changed \(and 1 by processes not the agent's\)
  created  c\.txt .*
  created  editor\.txt .*not the agent's
$`)
	if !want.MatchString(out) {
		t.Errorf("show 1 --steps:\n%s", out)
	}

	out, _, code = h.cowfs("show", "0f8fad5b-d9cb-469f-a165-708677289501", "--steps", "--json")
	var l ctl.StepList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("show --steps --json: exit %d: %s", code, out)
	}
	var got []string
	for _, st := range l.Steps {
		var paths []string
		for _, c := range st.Changes {
			paths = append(paths, string(c.Path))
		}
		got = append(got, st.ID+"("+st.Name+"):"+strings.Join(paths, ","))
	}
	if g := strings.Join(got, " "); l.Turn != 1 || g != "():before.txt toolu_01XFDUDYJgAACzvnptvVoYEL(Bash):a.txt,b.txt toolu_02Q8mV7Jc1b2(Write):c.txt,editor.txt" {
		t.Errorf("steps of turn %d: %s", l.Turn, g)
	}
	if _, _, code := h.cowfs("show", "1", "--steps", "--step", "x"); code != exitUsage {
		t.Errorf("--steps with --step: exit %d, want %d", code, exitUsage)
	}
}

// The changes made outside turns are listed, not only counted: show
// --outside, show 0, and as JSON.
func TestShowOutside(t *testing.T) {
	h := newHistory(t)
	h.create("early.txt", journal.Caller{Pid: 10, Uid: 1000, Comm: "vim"})
	h.begin("", "")
	h.create("turn.txt", journal.Caller{Pid: 11, Comm: "sh"})
	h.end()
	h.create("late.txt", journal.Caller{Pid: 12, Uid: 1000, Comm: "code"})
	h.close()

	for _, args := range [][]string{{"show", "--outside"}, {"show", "0"}} {
		out, _, code := h.cowfs(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if !strings.HasPrefix(out, "outside turns: 2 paths changed") ||
			!regexp.MustCompile(`(?m)^  created\s+early\.txt\s+0 B\s+[-0-9: ]+\s+vim pid 10 uid 1000$`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^  created\s+late\.txt\s+.*code pid 12 uid 1000$`).MatchString(out) ||
			strings.Contains(out, "turn.txt") {
			t.Errorf("%v:\n%s", args, out)
		}
	}
	out, _, code := h.cowfs("show", "--outside", "--json")
	var o ctl.OutsideChanges
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil || len(o.Changes) != 2 || o.Changes[0].Path != "early.txt" || o.Changes[1].Command != "code" {
		t.Errorf("show --outside --json: exit %d: %s", code, out)
	}
	if _, _, code := h.cowfs("show", "--outside", "1"); code != exitUsage {
		t.Errorf("show --outside 1: exit %d, want %d", code, exitUsage)
	}
}
