package e2e

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// The commands whose output is not a request's reply take --json too:
// mount prints the daemon's status, turn step the step begun, cat the
// content in base64, umount what it did, and run its exit code and
// turn after the command's own output.
func TestJSONMountStepCatUmountRun(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"s.txt": "old\n"})

	mount := exec.Command(cowfsBin, "mount", "--background", "--json", w.dir)
	mount.Env = w.env()
	out, err := mount.Output()
	if err != nil {
		t.Fatalf("mount --json: %v", err)
	}
	var st ctl.Status
	if err := json.Unmarshal(out, &st); err != nil || st.Pid == 0 || st.Socket == "" || st.Mountpoint != w.dir {
		t.Fatalf("mount --json: %v: %s", err, out)
	}
	w.pids = append(w.pids, st.Pid)

	w.cowfs("turn", "begin")
	var step ctl.StepStarted
	w.cowfsJSON(&step, "turn", "step", "toolu_01A", "--name", "Bash")
	if step.Turn != 1 || step.ID != "toolu_01A" || step.Name != "Bash" {
		t.Errorf("turn step --json: %+v", step)
	}
	w.sh("echo new > s.txt")
	w.cowfs("turn", "end")
	var steps ctl.StepList
	w.cowfsJSON(&steps, "show", "1", "--steps")
	if len(steps.Steps) != 1 || steps.Steps[0].Name != "Bash" || len(steps.Steps[0].Changes) != 1 || steps.Steps[0].Changes[0].Path != "s.txt" {
		t.Errorf("show 1 --steps --json: %+v", steps)
	}

	var content struct {
		Path    string
		At      string
		Content string
		Size    int64
	}
	w.cowfsJSON(&content, "cat", "--at", "1", "s.txt")
	if b, _ := base64.StdEncoding.DecodeString(content.Content); content.Path != "s.txt" || content.At != "1" || string(b) != "old\n" || content.Size != 4 {
		t.Errorf("cat --json: %+v", content)
	}

	var um struct {
		Workspace, Mountpoint, State string
		Pid                          int
	}
	w.cowfsJSON(&um, "umount")
	if um.State != "unmounted" || um.Pid != st.Pid || um.Mountpoint != w.dir {
		t.Errorf("umount --json: %+v", um)
	}
	w.pids = nil

	run := exec.Command(cowfsBin, "run", "-w", w.dir, "--turn", "--json", "--", "sh", "-c", "echo out; echo b > b.txt; exit 3")
	run.Env = w.env()
	out, err = run.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("run --json: %v, want exit 3", err)
	}
	first, rest, _ := strings.Cut(string(out), "\n")
	var res struct {
		ExitCode int       `json:"exit_code"`
		Turn     *ctl.Turn `json:"turn"`
	}
	if first != "out" || json.Unmarshal([]byte(rest), &res) != nil || res.ExitCode != 3 || res.Turn == nil || res.Turn.Num != 2 || res.Turn.ChangedPaths != 1 {
		t.Errorf("run --json: %q", out)
	}
}
