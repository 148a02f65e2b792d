package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
	"github.com/cowfs/cowfs/test/testenv"
)

// The control socket's directory, and the state directory, come from
// the environment; the daemon runs as root. One another user controls
// is refused before anything is created, changed or mounted: through a
// symlink, owned by someone else, or writable by others.
func TestSocketDirRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    func(t *testing.T, w *workspace) (env []string, watch string) // watch: must come out unchanged
		reason string
	}{
		{"socket dir is symlink", func(t *testing.T, w *workspace) ([]string, string) {
			canary := newCanary(t, w)
			link := filepath.Join(filepath.Dir(w.dir), "sockets")
			os.Symlink(canary, link)
			return []string{"COWFS_SOCKET_DIR=" + link}, canary
		}, "sockets is a symlink"},
		{"symlink above sockets", func(t *testing.T, w *workspace) ([]string, string) {
			canary := newCanary(t, w)
			link := filepath.Join(filepath.Dir(w.dir), "run")
			os.Symlink(canary, link)
			return []string{"COWFS_SOCKET_DIR=" + filepath.Join(link, "cowfs")}, canary
		}, "run is a symlink"},
		{"symlink above state", func(t *testing.T, w *workspace) ([]string, string) {
			canary := newCanary(t, w)
			link := filepath.Join(filepath.Dir(w.dir), "lib")
			os.Symlink(canary, link)
			return []string{"COWFS_STATE_DIR=" + filepath.Join(link, "cowfs")}, canary
		}, "lib is a symlink"},
		{"socket dir of nobody", func(t *testing.T, w *workspace) ([]string, string) {
			dir := filepath.Join(filepath.Dir(w.dir), "sockets")
			os.Mkdir(dir, 0o755)
			os.Chown(dir, nobody, nobody)
			return []string{"COWFS_SOCKET_DIR=" + dir}, dir
		}, "sockets is owned by uid 65534"},
		{"state dir of nobody", func(t *testing.T, w *workspace) ([]string, string) {
			l := locate(t, w)
			os.MkdirAll(l.Dir, 0o700)
			os.Chown(l.Dir, nobody, nobody)
			return nil, l.Dir
		}, "is owned by uid 65534"},
		{"socket dir 0770", func(t *testing.T, w *workspace) ([]string, string) {
			dir := filepath.Join(filepath.Dir(w.dir), "sockets")
			os.Mkdir(dir, 0o700)
			os.Chmod(dir, 0o770)
			return []string{"COWFS_SOCKET_DIR=" + dir}, dir
		}, "sockets is writable by its group or by others (mode 0770)"},
		{"socket dir 0777", func(t *testing.T, w *workspace) ([]string, string) {
			dir := filepath.Join(filepath.Dir(w.dir), "sockets")
			os.Mkdir(dir, 0o700)
			os.Chmod(dir, 0o777)
			return []string{"COWFS_SOCKET_DIR=" + dir}, dir
		}, "sockets is writable by its group or by others (mode 0777)"},
		{"0777 above sockets", func(t *testing.T, w *workspace) ([]string, string) {
			dir := filepath.Join(filepath.Dir(w.dir), "open")
			os.Mkdir(dir, 0o700)
			os.Chmod(dir, 0o777)
			return []string{"COWFS_SOCKET_DIR=" + filepath.Join(dir, "sockets")}, dir
		}, "open is writable by its group or by others (mode 0777)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t)
			w.seed(map[string]string{"f": "x\n"})
			env, watch := tc.env(t, w)
			before := snapshot(t, watch)
			// cowfs mount --background checks in the CLI, before the
			// daemon starts; cowfs run starts the daemon in-process.
			for _, args := range [][]string{
				{"mount", "--background", w.dir},
				{"run", "-w", w.dir, "--", "true"},
			} {
				cmd := exec.Command(cowfsBin, args...)
				cmd.Env = append(w.env(), env...)
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 8 || !strings.Contains(string(out), "refused: ") || !strings.Contains(string(out), tc.reason) {
					t.Errorf("cowfs %s: %v, want exit 8 and a refusal saying %q: %s", args[0], err, tc.reason, out)
				}
				if mounted(w.dir) {
					t.Errorf("cowfs %s mounted the workspace", args[0])
					um := exec.Command(cowfsBin, "umount", w.dir)
					um.Env = cmd.Env
					if out, err := um.CombinedOutput(); err != nil {
						t.Errorf("umount: %v: %s", err, out)
					}
				}
			}
			sameTree(t, watch, before, "what the environment named, after the refusal")
		})
	}
}

// locate returns the workspace's location as the CLI computes it in
// the test's environment (t.Setenv) and the workspace's.
func locate(t *testing.T, w *workspace) daemon.Location {
	t.Helper()
	t.Setenv("COWFS_STATE_DIR", w.state)
	l, err := daemon.Locate(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The CLI checks who listens on the socket (SO_PEERCRED) before it
// sends a request: another user's server at the path the CLI looks for
// gets nothing, and the CLI says who it was (exit 10).
func TestCLIRefusesForeignSocket(t *testing.T) {
	w := newWorkspace(t)
	// A socket directory another user controls, as COWFS_SOCKET_DIR
	// might name: its owner puts a socket of their own where the
	// daemon's would be.
	sockets, err := os.MkdirTemp("", "cowfs-sockets-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockets)
	os.Chown(sockets, nobody, nobody)
	t.Setenv(daemon.SocketDirEnv, sockets) // for the CLI too
	l := locate(t, w)
	srv := testenv.StartForeignServer(t, l.Socket(), nobody)

	for _, args := range [][]string{
		{"turn", "begin", "--id", "secret-turn-id"},
		{"status"},
		{"log"}, // a history command, which works offline too
		{"rollback", "1"},
	} {
		cmd := exec.Command(cowfsBin, append([]string{"-w", w.dir}, args...)...)
		cmd.Env = w.env()
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 10 {
			t.Errorf("cowfs %s: %v, want exit 10: %s", args[0], err, out)
		}
		for _, want := range []string{"refused", "uid 65534", l.Socket()} {
			if !strings.Contains(string(out), want) {
				t.Errorf("cowfs %s does not say %q: %s", args[0], want, out)
			}
		}
	}
	if got := srv.Stop(); len(got) != 0 {
		t.Errorf("the CLI sent another user's server %q", got)
	}
}

// Control connections are capped well under the daemon's descriptor
// limit: many more than the cap, all following the event stream, leave
// file operations in the workspace working and the daemon's descriptors
// bounded; the rest wait, and are served once others close.
func TestControlConnectionCap(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo one > a")
	w.cowfs("turn", "end")
	st := w.status()
	// A descriptor limit the connections would exhaust without the cap.
	const limit, conns = 1024, 1500
	if err := unix.Prlimit(st.Pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Fatal(err)
	}
	base := socketCount(t, st.Pid)

	var served atomic.Int64
	var wg sync.WaitGroup
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
		wg.Wait()
	}()
	for range conns {
		c, err := net.Dial("unix", st.Socket)
		if err != nil {
			t.Fatalf("connection %d: %v", len(open)+1, err)
		}
		open = append(open, c)
		if _, err := fmt.Fprintf(c, "GET /v1/events?since=0&follow=1 HTTP/1.1\r\nHost: cowfs\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			line, _ := bufio.NewReader(c).ReadString('\n')
			if strings.HasPrefix(line, "HTTP/1.1 200") {
				served.Add(1)
			}
		}()
	}
	// A bound, not a check: the streams the daemon accepts start at once.
	for deadline := time.Now().Add(time.Minute); served.Load() < ctl.MaxConns; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d event streams started", served.Load())
		}
	}

	// Files in the workspace still open, and are created whole.
	w.sh(`for i in $(seq 200); do echo "$i" > "f$i"; done; mkdir d; mv f1 d/; cat f2 f200 >/dev/null; rm f3`)
	if got := w.sh("cat f200"); got != "200\n" {
		t.Errorf("f200 holds %q", got)
	}
	if n := served.Load(); n > ctl.MaxConns {
		t.Errorf("%d connections served at once, over the cap of %d", n, ctl.MaxConns)
	}
	if n := socketCount(t, st.Pid); n > base+ctl.MaxConns {
		t.Errorf("the daemon holds %d sockets with %d connections made: %d before them, cap %d", n, conns, base, ctl.MaxConns)
	}

	// Once they close, a request is served as usual.
	for _, c := range open {
		c.Close()
	}
	open = nil
	wg.Wait()
	w.cowfs("turn", "begin")
	w.sh("echo two > a")
	w.cowfs("turn", "end")
	if d := w.turn("2"); len(d.Changes) != 1 {
		t.Errorf("turn 2 after the connections closed: %+v", d.Changes)
	}
}

// socketCount counts the sockets process pid holds descriptors of.
func socketCount(t *testing.T, pid int) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink(filepath.Join(dir, e.Name())); strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
