package ctl

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// TestClientRefusesForeignServer: a server on the socket that is
// neither root nor the client's uid — another user's socket put where
// the daemon's should be — gets no request: the client checks who
// listens (SO_PEERCRED) before it sends anything, and says who it was.
func TestClientRefusesForeignServer(t *testing.T) {
	const nobody = 65534
	testenv.NeedRoot(t)
	dir, err := os.MkdirTemp("", "cowfs-foreign-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chown(dir, nobody, nobody)
	sock := filepath.Join(dir, "ctl.sock")
	srv := testenv.StartForeignServer(t, sock, nobody)

	c := NewClient(sock)
	ctx := context.Background()
	_, err = c.BeginTurn(ctx, BeginTurnRequest{ID: "secret-turn-id"})
	var fe *ForeignServerError
	if !errors.Is(err, ErrForeignServer) || !errors.As(err, &fe) || fe.Uid != nobody || fe.Socket != sock {
		t.Fatalf("BeginTurn from a server run by uid %d: %v, want a ForeignServerError", nobody, err)
	}
	for _, want := range []string{"uid 65534", sock} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q: %v", want, err)
		}
	}
	if _, err := c.Status(ctx); !errors.Is(err, ErrForeignServer) {
		t.Errorf("Status: %v, want ErrForeignServer", err)
	}
	if err := c.Events(ctx, 0, false, func(Event) error { return nil }); !errors.Is(err, ErrForeignServer) {
		t.Errorf("Events: %v, want ErrForeignServer", err)
	}

	// The same server answers a client that does not check, and keeps
	// what it is sent: the check above is what kept the requests from it.
	raw := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := raw.Get("http://cowfs/unchecked")
	if err != nil {
		t.Fatalf("an unchecked request: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	raw.CloseIdleConnections()

	got := string(srv.Stop())
	if !strings.Contains(got, "GET /unchecked") {
		t.Errorf("the foreign server did not log the unchecked request: %q", got)
	}
	if strings.Contains(got, "/v1/") || strings.Contains(got, "secret-turn-id") {
		t.Errorf("the checked client sent the foreign server a request: %q", got)
	}
}

// TestCheckServer accepts a server run by the client's own uid (here
// root, which is also always accepted).
func TestCheckServer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := CheckServer(c, sock); err != nil {
		t.Errorf("a server of this uid: %v", err)
	}
}
