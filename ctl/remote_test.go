package ctl

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cowfs/cowfs/test/certs"
)

// serveRemote serves svc over mutual TLS on 127.0.0.1 with the TLS
// directory dir, and returns its URL and its ServerTLS.
func serveRemote(t *testing.T, svc Service, dir string) (string, *ServerTLS) {
	t.Helper()
	st, err := LoadServerTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenRemote("https://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(svc, nil)
	done := make(chan error, 1)
	go func() { done <- srv.ServeRemote(ln, st) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeRemote: %v", err)
		}
	})
	return RemoteURL(ln), st
}

func dialRemote(t *testing.T, url, dir string) *Client {
	t.Helper()
	c, err := DialRemote(url, dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRemoteServesAPI: the API over TLS is the socket's: the same
// routes, replies and errors.
func TestRemoteServesAPI(t *testing.T) {
	_, server, client := certs.Pair(t, t.TempDir())
	url, _ := serveRemote(t, fakeService{}, server)
	c := dialRemote(t, url, client)
	ctx := context.Background()
	if st, err := c.Status(ctx); err != nil || st.Pid != 1 {
		t.Fatalf("Status: %+v, %v", st, err)
	}
	if tu, err := c.BeginTurn(ctx, BeginTurnRequest{ID: "t1"}); err != nil || tu.ID != "t1" {
		t.Fatalf("BeginTurn: %+v, %v", tu, err)
	}
	if _, err := c.BeginTurn(ctx, BeginTurnRequest{ID: "busy"}); !errors.Is(err, &Error{Code: CodeBusy}) {
		t.Errorf("BeginTurn busy: %v, want busy", err)
	}
	var got []Event
	if err := c.Events(ctx, 0, false, func(e Event) error { got = append(got, e); return nil }); err != nil || len(got) != 1 {
		t.Errorf("Events: %+v, %v", got, err)
	}
	rc, err := c.Content(ctx, "1", "f")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "content" {
		t.Errorf("Content: %q", b)
	}
}

// TestRemoteRefuses: without a certificate signed by the daemon's
// ca.pem — none, another CA's, an expired one — or in plain HTTP, or
// below TLS 1.3, nothing is served.
func TestRemoteRefuses(t *testing.T) {
	root := t.TempDir()
	ca, server, _ := certs.Pair(t, root)
	url, _ := serveRemote(t, fakeService{}, server)
	other := certs.NewCA(t, "another CA")
	ctx := context.Background()

	refused := func(t *testing.T, c *Client) {
		t.Helper()
		st, err := c.Status(ctx)
		if err == nil {
			t.Fatalf("served: %+v", st)
		}
		if !errors.Is(err, ErrCertificate) {
			t.Errorf("error %v, want ErrCertificate", err)
		}
		if !strings.Contains(err.Error(), url) {
			t.Errorf("the error does not name %s: %v", url, err)
		}
	}
	t.Run("no client certificate", func(t *testing.T) {
		cfg, err := ClientTLS(ca.WriteClient(t, filepath.Join(root, "none"), ca, certs.Leaf{}))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = nil
		c, err := NewRemote(url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		refused(t, c)
	})
	t.Run("another CA", func(t *testing.T) {
		refused(t, dialRemote(t, url, other.WriteClient(t, filepath.Join(root, "other"), ca, certs.Leaf{})))
	})
	t.Run("expired", func(t *testing.T) {
		// (ClientTLS refuses to load an expired certificate: this
		// client sends one all the same.)
		cfg, err := ClientTLS(ca.WriteClient(t, filepath.Join(root, "expired"), ca, certs.Leaf{}))
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(ca.Issue(t, certs.Leaf{Name: "expired", Expired: true}))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
		c, err := NewRemote(url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		refused(t, c)
	})
	t.Run("server from another CA", func(t *testing.T) {
		// The client checks the daemon too: a server whose certificate
		// its ca.pem does not vouch for gets no request.
		refused(t, dialRemote(t, url, ca.WriteClient(t, filepath.Join(root, "wrongca"), other, certs.Leaf{})))
	})
	t.Run("TLS 1.2", func(t *testing.T) {
		cfg, err := ClientTLS(ca.WriteClient(t, filepath.Join(root, "tls12"), ca, certs.Leaf{}))
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxVersion = tls.VersionTLS12
		conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), cfg)
		if err == nil {
			err = conn.Handshake()
			conn.Close()
		}
		if err == nil {
			t.Fatal("a TLS 1.2 handshake succeeded")
		}
	})
	t.Run("plain HTTP", func(t *testing.T) {
		resp, err := http.Get("http://" + strings.TrimPrefix(url, "https://") + "/v1/status")
		if err != nil {
			return // refused outright: as good
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "pid") {
			t.Errorf("plain HTTP: %s %q, want 400 and no status", resp.Status, b)
		}
	})
	t.Run("plain http URL", func(t *testing.T) {
		if _, err := DialRemote(strings.Replace(url, "https", "http", 1), root); !errors.Is(err, ErrRemoteURL) || !strings.Contains(err.Error(), "https://") {
			t.Errorf("DialRemote http://: %v", err)
		}
	})
}

// TestRemoteReload: Reload makes new connections use the directory's
// new certificates — a client of the old CA is refused, one of the new
// accepted — and a bad new set leaves the last good one in use.
func TestRemoteReload(t *testing.T) {
	root := t.TempDir()
	_, server, oldClient := certs.Pair(t, root)
	url, st := serveRemote(t, fakeService{}, server)
	ctx := context.Background()
	if _, err := dialRemote(t, url, oldClient).Status(ctx); err != nil {
		t.Fatal(err)
	}
	ca2 := certs.NewCA(t, "rotated CA")
	ca2.WriteServer(t, server, ca2)
	newClient := ca2.WriteClient(t, filepath.Join(root, "new"), ca2, certs.Leaf{})
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := dialRemote(t, url, oldClient).Status(ctx); !errors.Is(err, ErrCertificate) {
		t.Errorf("old client after the rotation: %v, want refused", err)
	}
	if _, err := dialRemote(t, url, newClient).Status(ctx); err != nil {
		t.Errorf("new client after the rotation: %v", err)
	}

	if err := os.WriteFile(filepath.Join(server, "key.pem"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.Reload(); !errors.Is(err, ErrTLSDir) || !strings.Contains(err.Error(), "key.pem") {
		t.Errorf("Reload of a bad key: %v, want ErrTLSDir naming key.pem", err)
	}
	if _, err := dialRemote(t, url, newClient).Status(ctx); err != nil {
		t.Errorf("after a bad reload: %v, want the last good set still served", err)
	}
}

// TestTLSDirRefuses: the files of a TLS directory are read beneath it
// and refused if others could change them or read the key.
func TestTLSDirRefuses(t *testing.T) {
	root := t.TempDir()
	ca := certs.NewCA(t, "CA")
	fresh := func(name string) string { return ca.WriteServer(t, filepath.Join(root, name), ca) }
	for _, tc := range []struct {
		name, want string
		spoil      func(dir string)
	}{
		{"key readable by others", "open to others", func(dir string) { os.Chmod(filepath.Join(dir, "key.pem"), 0o644) }},
		{"ca writable by group", "writable by its group", func(dir string) { os.Chmod(filepath.Join(dir, "ca.pem"), 0o664) }},
		{"directory writable by others", "writable by its group or others", func(dir string) { os.Chmod(dir, 0o777) }},
		{"missing cert", "cert.pem", func(dir string) { os.Remove(filepath.Join(dir, "cert.pem")) }},
		{"ca out of the directory", "leads out of", func(dir string) {
			os.Rename(filepath.Join(dir, "ca.pem"), filepath.Join(root, "outside.pem"))
			os.Symlink("../outside.pem", filepath.Join(dir, "ca.pem"))
		}},
		{"ca absolute symlink", "leads out of", func(dir string) {
			os.Rename(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "real.pem"))
			os.Symlink(filepath.Join(dir, "real.pem"), filepath.Join(dir, "ca.pem"))
		}},
		{"ca not a certificate", "no certificate", func(dir string) { os.WriteFile(filepath.Join(dir, "ca.pem"), []byte("x"), 0o644) }},
		{"expired server certificate", "not now", func(dir string) {
			cert, key := ca.Issue(t, certs.Leaf{Server: true, Expired: true})
			certs.Write(t, dir, ca.PEM(), cert, key)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fresh(strings.ReplaceAll(tc.name, " ", "-"))
			tc.spoil(dir)
			_, err := LoadServerTLS(dir)
			if !errors.Is(err, ErrTLSDir) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadServerTLS: %v, want ErrTLSDir saying %q", err, tc.want)
			}
		})
	}

	// A Kubernetes Secret volume: a sticky directory anybody may write,
	// its names symlinks into ..data, a symlink to a dated directory.
	t.Run("kubernetes secret layout", func(t *testing.T) {
		dir := filepath.Join(root, "secret")
		ca.WriteServer(t, filepath.Join(dir, "..2026_12_07_00_00_00.1"), ca)
		os.Chmod(dir, 0o777|os.ModeSticky)
		os.Symlink("..2026_12_07_00_00_00.1", filepath.Join(dir, "..data"))
		for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
			os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f))
		}
		if _, err := LoadServerTLS(dir); err != nil {
			t.Errorf("LoadServerTLS: %v", err)
		}
	})
}

func TestParseRemoteURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://127.0.0.1:8443":  "127.0.0.1:8443",
		"https://127.0.0.1:8443/": "127.0.0.1:8443",
		"https://[::1]:1":         "[::1]:1",
		"https://host.example:9":  "host.example:9",
		"http://127.0.0.1:8443":   "",
		"https://127.0.0.1":       "",
		"https://:8443":           "",
		"127.0.0.1:8443":          "",
		"https://u@h:1":           "",
		"https://h:1/v1":          "",
		"https://h:1?x=1":         "",
	} {
		got, err := ParseRemoteURL(raw)
		if got != want || (want == "") != errors.Is(err, ErrRemoteURL) {
			t.Errorf("ParseRemoteURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
}

// streamService ends every event stream after two events, as a daemon
// that stops does, and begins each with an event the client saw
// already, as a reconnect might bring.
type streamService struct {
	fakeService
	mu    sync.Mutex
	opens int
}

const streamEvents = 9

func (s *streamService) Events(_ context.Context, since uint64, _ bool, emit func(Event) error) error {
	s.mu.Lock()
	s.opens++
	s.mu.Unlock()
	if since > 0 {
		if err := emit(Event{Seq: since, Type: EventChange}); err != nil {
			return err
		}
	}
	for seq := since + 1; seq <= min(since+2, streamEvents); seq++ {
		if err := emit(Event{Seq: seq, Type: EventChange}); err != nil {
			return err
		}
	}
	return nil
}

// TestFollowResumes: Follow, over TLS, reconnects whenever the stream
// ends and asks for what comes after the last event it passed on: every
// event arrives once, in order.
func TestFollowResumes(t *testing.T) {
	_, server, client := certs.Pair(t, t.TempDir())
	svc := &streamService{}
	url, _ := serveRemote(t, svc, server)
	c := dialRemote(t, url, client)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seqs []uint64
	reconnects := 0
	err := c.Follow(ctx, 0, FollowOptions{RetryDelay: time.Millisecond, OnReconnect: func(uint64, error) { reconnects++ }},
		func(e Event) error {
			seqs = append(seqs, e.Seq)
			if e.Seq == streamEvents {
				return errDone
			}
			return nil
		})
	if !errors.Is(err, errDone) {
		t.Fatalf("Follow: %v", err)
	}
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("events %v, want 1..%d once each", seqs, streamEvents)
		}
	}
	if reconnects < 4 {
		t.Errorf("%d reconnects, want at least 4", reconnects)
	}
}

var errDone = errors.New("done")

// TestFollowStopsOnRefusal: a certificate refused is not retried.
func TestFollowStopsOnRefusal(t *testing.T) {
	root := t.TempDir()
	ca, server, _ := certs.Pair(t, root)
	url, _ := serveRemote(t, fakeService{}, server)
	other := certs.NewCA(t, "another CA")
	c := dialRemote(t, url, other.WriteClient(t, filepath.Join(root, "other"), ca, certs.Leaf{}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Follow(ctx, 0, FollowOptions{}, func(Event) error { return nil })
	if !errors.Is(err, ErrCertificate) {
		t.Errorf("Follow: %v, want ErrCertificate", err)
	}
}
