package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// foreignEnv tells a re-executed test binary to be a ForeignServer on
// the socket it names.
const foreignEnv = "COWFS_TEST_FOREIGN_SERVER"

// HelperMain runs the helper a test re-executed its binary as, and
// exits; it returns at once in a test binary started as usual. Call it
// first in TestMain.
func HelperMain() {
	if path := os.Getenv(foreignEnv); path != "" {
		os.Exit(serveForeign(path))
	}
}

// ForeignServer is a Unix socket server run by another uid: what an
// attacker would put where a client looks for the daemon's socket. It
// answers every request with an empty JSON object, as a server that
// plays along would, and keeps every byte it receives, so a test can
// check that a client sent it nothing.
type ForeignServer struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// StartForeignServer runs a ForeignServer on the socket path as uid
// (and gid uid), in a copy of the test binary re-executed with those
// credentials; the socket's directory must let uid create it. The
// caller's TestMain must call HelperMain. Stop returns what it
// received; a cleanup stops it if the test does not.
func StartForeignServer(t testing.TB, path string, uid int) *ForeignServer {
	t.Helper()
	NeedRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary sits in a directory only root may enter: copy it
	// where uid can run it.
	dir, err := os.MkdirTemp("", "cowfs-foreign-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "helper")
	if err := copyFile(exe, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), foreignEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &ForeignServer{t: t, cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		if f.cmd.ProcessState == nil {
			f.Stop()
		}
	})
	if line, err := f.out.ReadString('\n'); line != "ready\n" {
		f.Stop()
		t.Fatalf("the foreign server did not start: %q %v", line, err)
	}
	return f
}

// Stop ends the server once the connections made to it are closed, and
// returns every byte it received.
func (f *ForeignServer) Stop() []byte {
	f.t.Helper()
	f.stdin.Close()
	rest, _ := io.ReadAll(f.out)
	if err := f.cmd.Wait(); err != nil {
		f.t.Errorf("the foreign server: %v", err)
	}
	line := strings.TrimPrefix(strings.TrimSpace(string(rest)), "received ")
	got, err := strconv.Unquote(line)
	if err != nil {
		f.t.Errorf("the foreign server's report %q: %v", rest, err)
	}
	return []byte(got)
}

// serveForeign is the helper's side of ForeignServer.
func serveForeign(path string) int {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "foreign server:", err)
		return 1
	}
	os.Chmod(path, 0o777) // root may connect anyway; anybody else too
	var mu sync.Mutex
	var got []byte
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				// A bound, not a check: a client that connects and
				// never sends nor closes ends here.
				c.SetReadDeadline(time.Now().Add(time.Minute))
				var req []byte
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					mu.Lock()
					got = append(got, buf[:n]...)
					mu.Unlock()
					req = append(req, buf[:n]...)
					if bytes.Contains(req, []byte("\r\n\r\n")) {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
						return
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin) // until Stop
	ln.Close()
	wg.Wait()
	mu.Lock()
	fmt.Printf("received %q\n", got)
	mu.Unlock()
	return 0
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
