package fs

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A process that execs is named as the new program at once, though its
// thread is cached.
func TestProcessNameAfterExec(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; exec sleep 30")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := uint32(cmd.Process.Pid)
	if p, comm, cmdline := process(pid); p != pid || comm != "sh" || cmdline != "sh -c read x; exec sleep 30" {
		t.Fatalf("before exec: pid %d %q %q, want %d sh", p, comm, cmdline, pid)
	}
	io.WriteString(in, "go\n")
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/comm")
		if strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the shell did not exec sleep")
		}
	}
	if p, comm, cmdline := process(pid); p != pid || comm != "sleep" || cmdline != "sleep 30" {
		t.Errorf("after exec: pid %d %q %q, want %d sleep 30", p, comm, cmdline, pid)
	}
}
