package fs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// While the journal's gate is held exclusively, as a rollback holds it,
// a write through the mount waits for it; other processes still stat
// and read through the mount. The daemon serves requests inline on one
// reader (mount.go, ServeInline), and the blocked write must hand the
// reading over rather than stall the mount.
func TestGateHeldMountServes(t *testing.T) {
	mnt, backing, j := testMount(t)
	// Made behind the mount, so the kernel knows nothing of them: every
	// look-up and read below is a request to the daemon.
	for _, name := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(backing, name), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := j.Exclusive()
	held := true
	defer func() {
		if held {
			g.Leave()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	writer := exec.CommandContext(ctx, "sh", "-c", "echo x >> "+filepath.Join(mnt, "a"))
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	waitsOnFUSE(t, writer.Process.Pid)

	run := func(name string, args ...string) string {
		out, err := exec.CommandContext(ctx, name, args...).Output()
		if err != nil {
			t.Fatalf("%s %v while the gate is held: %v (the mount stalls?)", name, args, err)
		}
		return string(out)
	}
	if got := run("stat", "-c", "%s", filepath.Join(mnt, "b")); strings.TrimSpace(got) != "2" {
		t.Fatalf("stat b: size %q, want 2", got)
	}
	if got := run("cat", filepath.Join(mnt, "b")); got != "b\n" {
		t.Fatalf("cat b: %q", got)
	}
	if got := run("ls", mnt); got != "a\nb\n" {
		t.Fatalf("ls: %q", got)
	}

	g.Leave()
	held = false
	if err := writer.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(backing, "a")); err != nil || string(b) != "a\nx\n" {
		t.Fatalf("a after the write: %q, %v", b, err)
	}
}

// waitsOnFUSE waits until process pid waits for an answer from a FUSE
// daemon.
func waitsOnFUSE(t *testing.T, pid int) {
	t.Helper()
	wchan := "/proc/" + strconv.Itoa(pid) + "/wchan"
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(wchan); err == nil && strings.Contains(string(b), "request_wait_answer") {
			return
		}
	}
	b, _ := os.ReadFile(wchan)
	t.Fatalf("the writer never waited on the mount (wchan %q)", b)
}
