package stress

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// run.sh's verdict follows what it runs: a stage whose tool fails makes
// the script fail and print no PASS, even when the tool's log shows no
// verification error (stress-ng exits 2 when a stressor fails, and its
// log need not say "verify"). Stand-ins for fio and stress-ng come first
// on PATH, so each stage's outcome is chosen here; the script itself is
// real (it mounts a workspace and rolls the turn back).
func TestRunScriptExitStatus(t *testing.T) {
	testenv.NeedFUSE(t)
	testenv.NeedTool(t, "go")
	cases := []struct {
		name, stage, tool, script string
		fails                     bool
	}{
		{"stress-ng passes", "stress-ng", "stress-ng", standIn(0), false},
		{"stress-ng fails", "stress-ng", "stress-ng", standIn(2), true},
		{"fio fails", "fio", "fio", standIn(1), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			bin := filepath.Join(tmp, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, tool := range []string{"fio", "stress-ng"} {
				s := standIn(0)
				if tool == c.tool {
					s = c.script
				}
				if err := os.WriteFile(filepath.Join(bin, tool), []byte(s), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("bash", "run.sh", "--only", c.stage)
			// mktemp puts the scratch directory, and so the mount, under tmp.
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "TMPDIR="+tmp)
			out, err := cmd.CombinedOutput()
			defer unmountUnder(t, tmp)
			passed := strings.Contains(string(out), "PASS")
			switch {
			case c.fails && (err == nil || passed):
				t.Fatalf("run.sh --only %s with a failing %s: err %v, output:\n%s", c.stage, c.tool, err, out)
			case !c.fails && (err != nil || !passed):
				t.Fatalf("run.sh --only %s: %v, output:\n%s", c.stage, err, out)
			}
		})
	}
}

// standIn is a script that plays fio or stress-ng: it writes a clean log
// where the real tool would (--output=F, --log-file F), changes a file in
// the directory it is given (so the stage's turn has something to roll
// back), and exits with code.
func standIn(code int) string {
	return `#!/bin/sh
dir= log=
while [ $# -gt 0 ]; do
	case $1 in
	--output=*) log=${1#--output=} ;;
	--directory=*) dir=${1#--directory=} ;;
	--log-file) log=$2; shift ;;
	--temp-path) dir=$2; shift ;;
	esac
	shift
done
[ -n "$log" ] && echo "all good" >"$log"
[ -n "$dir" ] && echo changed >"$dir/stand-in"
exit ` + strconv.Itoa(code) + "\n"
}

// unmountUnder detaches any mount left beneath dir, so a failing run.sh
// cannot leave one behind.
func unmountUnder(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	var left []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 1 && strings.HasPrefix(fields[1], dir+"/") {
			left = append(left, fields[1])
		}
	}
	for _, m := range left {
		t.Errorf("run.sh left %s mounted", m)
		exec.Command("umount", "-l", m).Run()
	}
}
