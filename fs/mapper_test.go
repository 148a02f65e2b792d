package fs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// A child of the test binary maps the file named by this variable,
// says so on stdout and waits for stdin to close.
const mapperChildEnv = "COWFS_TEST_MAPPER_CHILD"

func init() {
	path := os.Getenv(mapperChildEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		os.Exit(2)
	}
	if _, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("mapped\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// mappingChild starts a process that maps path and returns the file's
// device and inode and the process's pid.
func mappingChild(t *testing.T, path string) (dev, ino uint64, pid uint32) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), mapperChildEnv+"="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "mapped\n" {
		t.Fatalf("the child did not map the file (%q)", line)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev, st.Ino, uint32(cmd.Process.Pid)
}

func TestMapperScanFindsTheMapper(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m")
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, ino, pid := mappingChild(t, path)
	for _, hint := range []uint32{0, 1, uint32(os.Getpid())} { // none, wrong, the daemon
		if got := mapperWithin(dev, ino, hint); got != pid {
			t.Errorf("hint %d: mapper %d, want %d", hint, got, pid)
		}
	}
	if got := mapperWithin(dev, ino+1<<40, 0); got != 0 {
		t.Errorf("an inode nobody maps: mapper %d", got)
	}
}

// The hint is asked before any other process: of two that map the
// file, the scan would find the one with the lower pid first.
func TestMapperAsksTheHintFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m")
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, ino, first := mappingChild(t, path)
	_, _, second := mappingChild(t, path)
	for _, hint := range []uint32{first, second} {
		if got := mapperWithin(dev, ino, hint); got != hint {
			t.Errorf("mapper %d, want the hint %d", got, hint)
		}
	}
}
