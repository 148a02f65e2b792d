package fs

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

// sleeperEnv makes the test binary a process that says it runs and
// waits for its standard input to close: one with any command line.
const sleeperEnv = "COWFS_FS_TEST_SLEEPER"

func TestMain(m *testing.M) {
	if os.Getenv(sleeperEnv) != "" {
		os.Stdout.Write([]byte{1})
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A change names its process by its whole command line, not the comm
// the kernel cuts to 15 bytes: arguments joined by spaces, control
// characters and bytes that are not UTF-8 escaped, cut to 256 bytes with
// an ellipsis.
func TestCommandLine(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name string
		argv []string
		want string
	}{
		{"npm", []string{"npm", "pkg", "set", "scripts.test=node --test"}, "npm pkg set scripts.test=node --test"},
		{"escapes", []string{"sh", "-c", "printf '\x1b[2J'\nexit 0", "\xff\xfe", "\u202egnp.exe"}, `sh -c printf '\x1b[2J'\x0aexit 0 \xff\xfe \xe2\x80\xaegnp.exe`},
		{"long", []string{"sleep", long}, "sleep " + long[:256-len("sleep ")-len("…")] + "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The test binary, re-run as a sleeper with argv as its
			// command line (argv[0] included).
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := &exec.Cmd{Path: exe, Args: c.argv, Env: append(os.Environ(), sleeperEnv+"=1")}
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
			defer func() {
				in.Close()
				cmd.Wait()
			}()
			// Its command line is its own once it says it runs.
			if _, err := out.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			got := readCmdline(uint32(cmd.Process.Pid))
			if got != c.want {
				t.Errorf("command line\n got %q\nwant %q", got, c.want)
			}
			if len(got) > maxCmdline || !utf8.ValidString(got) {
				t.Errorf("%d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
			}
		})
	}
	if got := readCmdline(0); got != "" {
		t.Errorf("pid 0: %q", got)
	}
}

// escapeCmdline cuts at a character, never inside one, and marks a
// command line longer than what was read.
func TestEscapeCmdlineCuts(t *testing.T) {
	b := []byte(strings.Repeat("é", 200)) // 400 bytes
	got := escapeCmdline(b[:maxCmdline+1], true)
	if len(got) > maxCmdline || !utf8.ValidString(got) || !strings.HasSuffix(got, "é…") {
		t.Errorf("%d bytes %q", len(got), got)
	}
	if got := escapeCmdline([]byte("a\x00b\x00"), false); got != "a b" {
		t.Errorf("a NUL b NUL: %q", got)
	}
	exact := strings.Repeat("y", maxCmdline)
	if got := escapeCmdline([]byte(exact+"\x00"), false); got != exact {
		t.Errorf("exactly %d bytes cut: %q", maxCmdline, got)
	}
}

// What reading a command line costs: once per process a change is
// journaled for, and again after it execs.
func BenchmarkReadCmdline(b *testing.B) {
	pid := uint32(os.Getpid())
	for i := 0; i < b.N; i++ {
		if readCmdline(pid) == "" {
			b.Fatal("no command line")
		}
	}
}
