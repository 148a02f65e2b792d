package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/certs"
)

// tlsDirs are a daemon's TLS directory and a client's, one CA's.
type tlsDirs struct {
	ca             *certs.CA
	root           string
	server, client string
}

func newTLSDirs(t *testing.T) tlsDirs {
	t.Helper()
	root := t.TempDir()
	ca, server, client := certs.Pair(t, root)
	return tlsDirs{ca: ca, root: root, server: server, client: client}
}

// mountRemote mounts w, also serving the API over mutual TLS on a free
// loopback port, and returns where.
func (w *workspace) mountRemote(d tlsDirs) string {
	w.t.Helper()
	w.mount("--listen", "https://127.0.0.1:0", "--tls-dir", d.server)
	url := w.status().Listen
	if !strings.HasPrefix(url, "https://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		w.t.Fatalf("the status says it listens at %q", url)
	}
	return url
}

// remote runs the CLI against the daemon at url, with the client TLS
// directory dir and no -w.
func (w *workspace) remote(url, dir string, args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	return w.cli(append([]string{"--remote", url, "--tls-dir", dir}, args...)...)
}

// remoteJSON runs a remote command with --json that must succeed and
// decodes what it prints into v.
func (w *workspace) remoteJSON(v any, url, dir string, args ...string) {
	w.t.Helper()
	out, errOut, code := w.remote(url, dir, append(args, "--json")...)
	if code != 0 {
		w.t.Fatalf("cowfs --remote %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		w.t.Fatalf("cowfs --remote %v: bad JSON %q: %v", args, out, err)
	}
}

func dialRemote(t *testing.T, url, dir string) *ctl.Client {
	t.Helper()
	c, err := ctl.DialRemote(url, dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRemote: a harness on another machine — here, loopback — drives
// the daemon over mutual TLS, with the Go client and with the CLI's
// --remote: status, turns, the event stream, a rollback; the Unix
// socket keeps working beside it.
func TestRemote(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": "one\n"})
	d := newTLSDirs(t)
	url := w.mountRemote(d)
	c := dialRemote(t, url, d.client)
	ctx := context.Background()

	st, err := c.Status(ctx)
	if err != nil || st.Listen != url || st.Workspace != w.dir {
		t.Fatalf("remote Status: %+v, %v", st, err)
	}
	f := follow(t, c, 0) // events_test.go

	// The CLI: a turn, a change in it, its end.
	var begun ctl.Turn
	w.remoteJSON(&begun, url, d.client, "turn", "begin", "--id", "r1")
	if begun.Num != 1 || begun.ID != "r1" {
		t.Fatalf("turn begin over TLS: %+v", begun)
	}
	w.sh("echo two > a.txt")
	var ended ctl.Turn
	w.remoteJSON(&ended, url, d.client, "turn", "end")
	if ended.Num != 1 {
		t.Fatalf("turn end over TLS: %+v", ended)
	}
	f.waitFor(t, "the change of a.txt in turn 1", func(e ctl.Event) bool {
		return e.Type == ctl.EventChange && e.Turn == 1 && e.Path == "a.txt"
	})
	f.waitFor(t, "turn 1's end", func(e ctl.Event) bool { return e.Type == ctl.EventTurnEnd && e.Turn == 1 })

	// The Go client: a second turn.
	if _, err := c.BeginTurn(ctx, ctl.BeginTurnRequest{ID: "r2"}); err != nil {
		t.Fatal(err)
	}
	w.sh("echo three > a.txt; echo new > b.txt")
	if tu, err := c.EndTurn(ctx); err != nil || tu.Num != 2 {
		t.Fatalf("EndTurn over TLS: %+v, %v", tu, err)
	}
	var rst ctl.Status
	w.remoteJSON(&rst, url, d.client, "status")
	if rst.Turns != 2 || rst.Listen != url || rst.Pid != st.Pid {
		t.Errorf("cowfs --remote status: %+v", rst)
	}
	if got, _, code := w.remote(url, d.client, "cat", "--at", "2", "a.txt"); code != 0 || got != "two\n" {
		t.Errorf("cowfs --remote cat --at 2 a.txt: %q (exit %d)", got, code)
	}
	if got, _, code := w.remote(url, d.client, "cat", "--at", "2", filepath.Join(w.dir, "a.txt")); code != 0 || got != "two\n" {
		t.Errorf("cowfs --remote cat with the workspace's absolute path: %q (exit %d)", got, code)
	}

	// A rollback over TLS, and its event.
	var res ctl.RollbackResult
	w.remoteJSON(&res, url, d.client, "rollback", "1")
	if !res.Complete || res.Target != 1 {
		t.Fatalf("rollback over TLS: %+v", res)
	}
	if got := string(mustRead(t, w.path("a.txt"))); got != "one\n" {
		t.Errorf("a.txt after the rollback: %q", got)
	}
	if _, err := os.Stat(w.path("b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.txt after the rollback: %v", err)
	}
	f.waitFor(t, "the rollback", func(e ctl.Event) bool { return e.Type == ctl.EventRollback })
	if _, err := c.Unrevert(ctx, ctl.UnrevertRequest{}); err != nil {
		t.Fatalf("Unrevert over TLS: %v", err)
	}
	if got := string(mustRead(t, w.path("a.txt"))); got != "three\n" {
		t.Errorf("a.txt after the unrevert: %q", got)
	}

	// The CLI's event stream is the socket's.
	remoteEvents, _, code := w.remote(url, d.client, "events", "--json")
	if code != 0 {
		t.Fatalf("cowfs --remote events: exit %d", code)
	}
	if local := w.cowfs("events", "--json"); remoteEvents != local {
		t.Errorf("events over TLS:\n%s\nover the socket:\n%s", remoteEvents, local)
	}
	for _, args := range [][]string{{"log"}, {"show", "2"}, {"diff", "1"}, {"markers"}} {
		if _, errOut, code := w.remote(url, d.client, args...); code != 0 {
			t.Errorf("cowfs --remote %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}

	// Commands that need the workspace here refuse, and change nothing.
	for _, args := range [][]string{{"umount"}, {"purge"}, {"fsck"}, {"mount", w.dir}, {"run", "true"}} {
		if _, errOut, code := w.remote(url, d.client, args...); code != 2 || !strings.Contains(errOut, "on this machine") {
			t.Errorf("cowfs --remote %s: exit %d, %q; want 2 and why", args[0], code, errOut)
		}
	}
	if !mounted(w.mnt) {
		t.Fatal("unmounted by a refused remote command")
	}
	if st := w.status(); st.Listen != url {
		t.Errorf("the socket's status says it listens at %q", st.Listen)
	}
}

// TestRemoteRefusesStrangers: over a real daemon's port, a client
// certificate from another CA, an expired one, none, and plain HTTP
// get nothing served; the CLI says the certificate was refused.
func TestRemoteRefusesStrangers(t *testing.T) {
	w := newWorkspace(t)
	d := newTLSDirs(t)
	url := w.mountRemote(d)
	ctx := context.Background()

	other := certs.NewCA(t, "another CA")
	otherDir := other.WriteClient(t, filepath.Join(d.root, "other"), d.ca, certs.Leaf{})
	_, errOut, code := w.remote(url, otherDir, "turn", "begin")
	if code == 0 || !strings.Contains(errOut, "certificate refused by the daemon") {
		t.Errorf("cowfs --remote with another CA's certificate: exit %d, %q", code, errOut)
	}

	cfg, err := ctl.ClientTLS(d.client)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := tls.X509KeyPair(d.ca.Issue(t, certs.Leaf{Name: "expired", Expired: true}))
	if err != nil {
		t.Fatal(err)
	}
	for name, certsSent := range map[string][]tls.Certificate{"none": nil, "expired": {expired}} {
		cfg := cfg.Clone()
		cfg.Certificates = certsSent
		c, err := ctl.NewRemote(url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.BeginTurn(ctx, ctl.BeginTurnRequest{}); !errors.Is(err, ctl.ErrCertificate) {
			t.Errorf("client certificate %s: %v, want refused", name, err)
		}
	}
	resp, err := http.Get("http://" + strings.TrimPrefix(url, "https://") + "/v1/status")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "pid") {
			t.Errorf("plain HTTP: %s %q", resp.Status, b)
		}
	}
	if st := w.status(); st.OpenTurn != nil || st.Turns != 0 {
		t.Errorf("a refused client changed something: %+v", st)
	}
}

// TestListenRefusedAtStart: --listen without --tls-dir, with http://,
// or with a key others can read fails the start with nothing mounted.
func TestListenRefusedAtStart(t *testing.T) {
	w := newWorkspace(t)
	d := newTLSDirs(t)
	if err := os.Chmod(filepath.Join(d.server, "key.pem"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		code  int
		want  string
	}{
		{[]string{"--listen", "https://127.0.0.1:0"}, 2, "--tls-dir"},
		{[]string{"--listen", "http://127.0.0.1:0", "--tls-dir", d.server}, 2, "https://"},
		{[]string{"--tls-dir", d.server}, 2, "--listen"},
		{[]string{"--listen", "https://127.0.0.1:0", "--tls-dir", d.server}, 8, "key.pem"},
	} {
		for _, bg := range []bool{false, true} {
			args := append([]string{"mount"}, tc.flags...)
			if bg {
				args = append(args, "--background")
			}
			cmd := exec.Command(cowfsBin, append(args, w.dir)...)
			cmd.Env = w.env()
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(string(out), tc.want) {
				t.Errorf("cowfs %s: %v, %q; want exit %d saying %q", strings.Join(args, " "), err, out, tc.code, tc.want)
			}
			if mounted(w.dir) {
				t.Fatalf("cowfs %s mounted the workspace", strings.Join(args, " "))
			}
		}
	}
}

// TestRemoteReloadOnSIGHUP: SIGHUP to the daemon rotates its
// certificates to a new CA: a client of the old one is refused, one of
// the new served; a bad set then keeps the good one in use.
func TestRemoteReloadOnSIGHUP(t *testing.T) {
	w := newWorkspace(t)
	d := newTLSDirs(t)
	url := w.mountRemote(d)
	pid := w.status().Pid
	ctx := context.Background()
	if _, err := dialRemote(t, url, d.client).Status(ctx); err != nil {
		t.Fatal(err)
	}
	ca2 := certs.NewCA(t, "rotated CA")
	ca2.WriteServer(t, d.server, ca2)
	newClient := ca2.WriteClient(t, filepath.Join(d.root, "new"), ca2, certs.Leaf{})
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new CA's client served", func() error {
		_, err := dialRemote(t, url, newClient).Status(ctx)
		return err
	})
	if _, err := dialRemote(t, url, d.client).Status(ctx); !errors.Is(err, ctl.ErrCertificate) {
		t.Errorf("the old CA's client after the rotation: %v, want refused", err)
	}

	if err := os.WriteFile(filepath.Join(d.server, "cert.pem"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGHUP)
	eventually(t, "the refused reload logged", func() error {
		logs, _ := filepath.Glob(filepath.Join(w.state, "*", "daemon.log"))
		for _, l := range logs {
			if b, _ := os.ReadFile(l); bytes.Contains(b, []byte("not reloaded")) {
				return nil
			}
		}
		return errors.New("not in the log yet")
	})
	if _, err := dialRemote(t, url, newClient).Status(ctx); err != nil {
		t.Errorf("after a bad reload: %v, want the good set still in use", err)
	}
	if st := w.status(); st.Pid != pid {
		t.Errorf("SIGHUP restarted or stopped the daemon: pid %d, was %d", st.Pid, pid)
	}
}

// eventually retries f for some seconds until it succeeds.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

// eventReader is a cowfs events --follow --json --remote process, read
// line by line as a harness reads it.
type eventReader struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
}

func (w *workspace) startEvents(url, dir string, since uint64) *eventReader {
	w.t.Helper()
	cmd := exec.Command(cowfsBin, "--remote", url, "--tls-dir", dir, "events", "--follow", "--json", "--since", strconv.FormatUint(since, 10))
	cmd.Env = w.env()
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &eventReader{cmd: cmd, lines: bufio.NewScanner(out)}
}

// until reads events until ok says stop, and returns them.
func (r *eventReader) until(t *testing.T, ok func(ctl.Event) bool) []ctl.Event {
	t.Helper()
	var evs []ctl.Event
	for r.lines.Scan() {
		var e ctl.Event
		if err := json.Unmarshal(r.lines.Bytes(), &e); err != nil {
			t.Fatalf("bad event line %q: %v", r.lines.Text(), err)
		}
		evs = append(evs, e)
		if ok(e) {
			return evs
		}
	}
	t.Fatalf("the event stream ended after %d events: %v", len(evs), r.lines.Err())
	return nil
}

// TestRemoteStreamSurvivesHarnessRestart: a harness process following
// the events over TLS is killed in the middle of a stream; a new one,
// from the last seq the first saw, gets everything after it, once.
func TestRemoteStreamSurvivesHarnessRestart(t *testing.T) {
	w := newWorkspace(t)
	d := newTLSDirs(t)
	url := w.mountRemote(d)
	start := w.lastSeq() // events_history_test.go

	first := w.startEvents(url, d.client, start)
	w.cowfs("turn", "begin", "--id", "s1")
	w.sh("for i in 1 2 3 4 5 6; do echo $i > f$i; done")
	// Read up to the third file's change, then the harness dies: what
	// the pipe held beyond it was never seen.
	seen := first.until(t, func(e ctl.Event) bool { return e.Type == ctl.EventChange && e.Path == "f3" })
	first.cmd.Process.Kill()
	first.cmd.Wait()

	// Changes while no harness follows.
	w.sh("rm f1; mv f2 g2; echo more >> f4")
	w.cowfs("turn", "end")

	second := w.startEvents(url, d.client, seen[len(seen)-1].Seq)
	w.cowfs("turn", "begin", "--id", "s2")
	w.sh("echo last > z")
	w.cowfs("turn", "end")
	seen = append(seen, second.until(t, func(e ctl.Event) bool { return e.Type == ctl.EventTurnEnd && e.Turn == 2 })...)

	all := w.events(start) // over the socket
	if len(seen) != len(all) {
		t.Fatalf("the two harnesses saw %d events, the journal has %d:\nseen %v\nall  %v", len(seen), len(all), seqsOf(seen), seqsOf(all))
	}
	for i := range all {
		if seen[i].Seq != all[i].Seq || seen[i].Type != all[i].Type || seen[i].Path != all[i].Path {
			t.Errorf("event %d: seen %+v, journal %+v", i, seen[i], all[i])
		}
	}
}

func seqsOf(evs []ctl.Event) []uint64 {
	var s []uint64
	for _, e := range evs {
		s = append(s, e.Seq)
	}
	return s
}

// TestRunListens: cowfs run serves the API over TLS while its command
// runs; SIGHUP to the sandbox (the daemon's pid) reloads the
// certificates and does not reach the command.
func TestRunListens(t *testing.T) {
	w := newWorkspace(t)
	d := newTLSDirs(t)
	url := "https://" + freePort(t)
	r := w.start("echo ready; read x; echo done", "--listen", url, "--tls-dir", d.server)
	r.expect("ready")
	var st ctl.Status
	w.remoteJSON(&st, url, d.client, "status")
	if st.Listen != url {
		t.Fatalf("cowfs run's status over TLS: %+v", st)
	}
	var tu ctl.Turn
	w.remoteJSON(&tu, url, d.client, "turn", "begin")
	w.remoteJSON(&tu, url, d.client, "turn", "end")

	ca2 := certs.NewCA(t, "rotated CA")
	ca2.WriteServer(t, d.server, ca2)
	newClient := ca2.WriteClient(t, filepath.Join(d.root, "new"), ca2, certs.Leaf{})
	if err := syscall.Kill(st.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new CA's client served", func() error {
		_, err := dialRemote(t, url, newClient).Status(context.Background())
		return err
	})
	r.send("x")
	r.expect("done")
	if code := r.wait(); code != 0 {
		t.Errorf("cowfs run: exit %d: %s", code, r.stderr.String())
	}
}

// freePort returns a loopback address no one listens on (for cowfs
// run, whose status the test cannot read before it knows where).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRemoteFollowAcrossDaemonRestart: the Go client's Follow, over
// TLS, outlives the daemon: unmounted and mounted again on the same
// port, it resumes after the last event it passed on, and nothing
// comes twice or goes missing.
func TestRemoteFollowAcrossDaemonRestart(t *testing.T) {
	w := newWorkspace(t)
	d := newTLSDirs(t)
	url := w.mountRemote(d)
	c := dialRemote(t, url, d.client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan ctl.Event, 1000)
	lost := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() {
		done <- c.Follow(ctx, 0, ctl.FollowOptions{RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 100 * time.Millisecond,
			OnReconnect: func(uint64, error) {
				select {
				case lost <- struct{}{}:
				default:
				}
			}},
			func(e ctl.Event) error { got <- e; return nil })
	}()
	waitEvent := func(what string, ok func(ctl.Event) bool) []ctl.Event {
		t.Helper()
		var evs []ctl.Event
		timeout := time.After(20 * time.Second)
		for {
			select {
			case e := <-got:
				evs = append(evs, e)
				if ok(e) {
					return evs
				}
			case <-timeout:
				t.Fatalf("no %s; got %+v", what, evs)
			}
		}
	}

	w.cowfs("turn", "begin")
	w.sh("echo 1 > a")
	w.cowfs("turn", "end")
	seen := waitEvent("turn 1's end", func(e ctl.Event) bool { return e.Type == ctl.EventTurnEnd && e.Turn == 1 })

	w.cowfs("umount")
	<-lost
	w.mount("--listen", url, "--tls-dir", d.server)
	w.cowfs("turn", "begin")
	w.sh("echo 2 > b")
	w.cowfs("turn", "end")
	seen = append(seen, waitEvent("turn 2's end", func(e ctl.Event) bool { return e.Type == ctl.EventTurnEnd && e.Turn == 2 })...)

	all := w.events(0)
	if len(seen) != len(all) {
		t.Fatalf("Follow passed on %v, the journal has %v", seqsOf(seen), seqsOf(all))
	}
	for i := range all {
		if seen[i].Seq != all[i].Seq || seen[i].Type != all[i].Type {
			t.Errorf("event %d: followed %+v, journal %+v", i, seen[i], all[i])
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Follow: %v", err)
	}
}
