package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/privdir"
	"github.com/cowfs/cowfs/test/testenv"
)

// fakeService answers with fixed values; it is enough to test the wire.
type fakeService struct{}

func (fakeService) Status(context.Context) (Status, error) { return Status{Pid: 1}, nil }
func (fakeService) BeginTurn(_ context.Context, r BeginTurnRequest) (Turn, error) {
	if r.ID == "busy" {
		return Turn{}, Errorf(CodeBusy, "a turn is open")
	}
	return Turn{Num: 1, ID: r.ID, Anchor: r.Anchor, State: StateOpen}, nil
}
func (fakeService) EndTurn(context.Context) (Turn, error) { return Turn{}, errors.New("boom") }
func (fakeService) Turns(context.Context) (TurnList, error) {
	return TurnList{Turns: []Turn{}}, nil
}
func (fakeService) Turn(_ context.Context, ref, _ string) (TurnDetail, error) {
	return TurnDetail{}, Errorf(CodeNotFound, "no turn %q", ref)
}
func (fakeService) Steps(_ context.Context, ref string) (StepList, error) {
	return StepList{Steps: []Step{{ID: ref}}}, nil
}
func (fakeService) Outside(context.Context) (OutsideChanges, error) {
	return OutsideChanges{Changes: []Change{}}, nil
}
func (fakeService) Content(context.Context, string, string) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("content")), nil
}
func (fakeService) Rollback(_ context.Context, r RollbackRequest) (RollbackResult, error) {
	return RollbackResult{Target: 7, DryRun: r.DryRun}, nil
}
func (fakeService) Unrevert(context.Context, UnrevertRequest) (RollbackResult, error) {
	return RollbackResult{}, nil
}
func (fakeService) Markers(context.Context) (MarkerList, error) { return MarkerList{}, nil }
func (fakeService) BeginStep(context.Context, StepRequest) (StepStarted, error) {
	return StepStarted{}, nil
}
func (fakeService) Events(_ context.Context, _ uint64, _ bool, emit func(Event) error) error {
	return emit(Event{Seq: 1, Type: EventTurnBegin})
}
func (fakeService) Diff(context.Context, DiffRequest) (Diff, error) { return Diff{}, nil }
func (fakeService) Shutdown(context.Context) error                  { return nil }
func (fakeService) Purge(context.Context) (Purged, error)           { return Purged{}, nil }

// serve sends one request to the server's handler, as the peer root.
func serve(method, path string, body []byte) *httptest.ResponseRecorder {
	req, err := http.NewRequest(method, "http://cowfs"+path, bytes.NewReader(body))
	if err != nil {
		return nil // not a request a client could send
	}
	h := NewServer(fakeService{}, nil).routes()
	req = req.WithContext(context.WithValue(req.Context(), peerKey{}, &syscall.Ucred{Uid: 0}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func errorCode(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var eb errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error == nil {
		t.Fatalf("status %d with a body that is not an error: %q", rec.Code, rec.Body)
	}
	return eb.Error.Code
}

func TestBadRequests(t *testing.T) {
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/turns", `{"id": 1}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"id": "a", "extra": true}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"id": "a"} {"id": "b"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `[]`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"id": "` + strings.Repeat("x", 70000) + `"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"id": "busy"}`, 409, CodeBusy},
		{"DELETE", "/v1/turns", ``, 405, CodeBadRequest},
		{"GET", "/v1/nope", ``, 404, CodeNotFound},
		{"GET", "/v1/turns/3", ``, 404, CodeNotFound},
		{"POST", "/v1/turns/current/end", ``, 500, CodeInternal},
		{"POST", "/v1/rollback", `{}`, 400, CodeBadRequest},
		{"POST", "/v1/rollback", `{"to": [1]}`, 400, CodeBadRequest},
		{"POST", "/v1/rollback", `{"to": 3, "dry_run": "yes"}`, 400, CodeBadRequest},
		// JSON numbers that are no turn number.
		{"POST", "/v1/rollback", `{"to": -1}`, 400, CodeBadRequest},
		{"POST", "/v1/rollback", `{"to": 1e3}`, 400, CodeBadRequest},
		{"POST", "/v1/rollback", `{"to": 7.0}`, 400, CodeBadRequest},
		{"POST", "/v1/rollback", `{"to": 99999999999999999999}`, 400, CodeBadRequest},
		{"GET", "/v1/content?at=1", ``, 400, CodeBadRequest},
		{"GET", "/v1/events?since=-1", ``, 400, CodeBadRequest},
		{"GET", "/v1/events?follow=maybe", ``, 400, CodeBadRequest},
		{"GET", "/v1/diff", ``, 400, CodeBadRequest},
		{"POST", "/v1/turns/current/steps", `{}`, 400, CodeBadRequest},
		// Hostile labels: control characters, NUL, escapes, not UTF-8,
		// too long.
		{"POST", "/v1/turns", `{"id": "a\nb"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"id": "a\u0000b"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"anchor": "\u001b[31mred"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"anchor": "rtl\u202eevil"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"id": " padded"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"id": "` + strings.Repeat("x", 257) + `"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns", `{"anchor": "` + strings.Repeat("x", 1025) + `"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns/current/steps", `{"id": "s\t1"}`, 400, CodeBadRequest},
		{"POST", "/v1/turns/current/steps", `{"id": "s1", "name": "Bash\u001b"}`, 400, CodeBadRequest},
		{"GET", "/v1/turns/a%0Ab/steps", ``, 400, CodeBadRequest},
		{"POST", "/v1/outside", ``, 405, CodeBadRequest},
		{"POST", "/v1/rollback", `{"to": "x\ny"}`, 400, CodeBadRequest},
		{"GET", "/v1/turns/a%00b", ``, 400, CodeBadRequest},
		{"GET", "/v1/content?at=a%0Ab&path=x", ``, 400, CodeBadRequest},
		{"GET", "/v1/diff?from=1&step=%1B", ``, 400, CodeBadRequest},
	}
	for _, c := range cases {
		rec := serve(c.method, c.path, []byte(c.body))
		if rec.Code != c.status {
			t.Errorf("%s %s %.40q: status %d, want %d (%s)", c.method, c.path, c.body, rec.Code, c.status, rec.Body)
			continue
		}
		if code := errorCode(t, rec); code != c.code {
			t.Errorf("%s %s: code %s, want %s", c.method, c.path, code, c.code)
		}
	}
	// Labels with spaces and non-ASCII text are fine.
	if rec := serve("POST", "/v1/turns", []byte(`{"id": "call 7 ü", "anchor": "msg-名前"}`)); rec.Code != 201 {
		t.Errorf("a printable id: %d %s", rec.Code, rec.Body)
	}
	// A turn given as a number or a string.
	for _, body := range []string{`{"to": 7}`, `{"to": "7"}`, `{"to": "call-7"}`} {
		if rec := serve("POST", "/v1/rollback", []byte(body)); rec.Code != 200 {
			t.Errorf("rollback %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	// Events are JSON lines.
	rec := serve("GET", "/v1/events", nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/x-ndjson" || !strings.HasSuffix(rec.Body.String(), "}\n") {
		t.Errorf("events: %d %q", rec.Code, rec.Body)
	}
}

// Whatever a client sends, the server answers with a JSON body and a
// status it documents, and never panics.
func FuzzRequests(f *testing.F) {
	for _, seed := range []struct{ method, path, body string }{
		{"POST", "/v1/turns", `{"id":"a","anchor":"b"}`},
		{"POST", "/v1/rollback", `{"to":3,"dry_run":true,"force":false}`},
		{"POST", "/v1/unrevert", `{"force":true}`},
		{"POST", "/v1/turns/current/steps", `{"id":"call_1"}`},
		{"GET", "/v1/diff?from=1&to=now&stat=1", ``},
		{"GET", "/v1/events?since=5", ``},
	} {
		f.Add(seed.method, seed.path, []byte(seed.body))
	}
	documented := map[int]bool{200: true, 201: true, 202: true, 400: true, 403: true, 404: true, 405: true, 409: true, 410: true, 500: true}
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		if !strings.HasPrefix(path, "/") {
			return
		}
		rec := serve(method, path, body)
		if rec == nil {
			return // not a request a client could send
		}
		if !documented[rec.Code] {
			t.Fatalf("%s %s: undocumented status %d", method, path, rec.Code)
		}
		if rec.Code >= 400 {
			errorCode(t, rec)
		}
	})
}

// Only the daemon's uid and root may use the socket, whatever its mode.
func TestPeerUID(t *testing.T) {
	testenv.NeedRoot(t) // to connect as another user
	curl := testenv.NeedTool(t, "curl")
	// A directory nobody can reach (t.TempDir's parent is 0700).
	dir, err := os.MkdirTemp("", "cowfs-peer-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s", "ctl.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(fakeService{}, nil)
	go srv.Serve(ln)
	defer srv.Close()
	// Open the socket to everyone: the uid check must still refuse.
	os.Chmod(filepath.Dir(sock), 0o777)
	os.Chmod(dir, 0o777)
	os.Chmod(sock, 0o777)
	cmd := exec.Command(curl, "-s", "-w", " %{http_code}", "--unix-socket", sock, "http://cowfs/v1/status")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl as nobody: %v", err)
	}
	if !strings.HasSuffix(string(out), " 403") || !strings.Contains(string(out), CodeForbidden) {
		t.Errorf("as nobody: %s", out)
	}
	resp, err := NewClient(sock).Status(context.Background())
	if err != nil || resp.Pid != 1 {
		t.Errorf("as root: %+v %v", resp, err)
	}
}

// The socket is private to its owner while it serves; a socket left by
// a dead daemon is replaced, one a live daemon answers on is not.
func TestListen(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(fakeService{}, nil)
	go srv.Serve(ln)
	defer srv.Close()
	if _, err := NewClient(sock).Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("serving socket: mode %v, want a socket with 0600", fi.Mode())
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the socket's directory: %v %v, want 0700", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(sock)); len(ents) != 1 {
		t.Errorf("the socket's directory holds %v, want the socket alone", ents)
	}
	if _, err := Listen(sock); err == nil {
		t.Fatal("a second listener took a live socket")
	}

	// A dead daemon's socket: bound, never unlinked, nobody accepting.
	stale := filepath.Join(t.TempDir(), "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Lstat(stale); err != nil {
		t.Fatalf("the stale socket is gone before the test: %v", err)
	}
	ln2, err := Listen(stale)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	defer ln2.Close()
	if fi, err := os.Lstat(stale); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced socket: %v %v", fi, err)
	}
}

// TestListenRefused: a socket directory reached through a symlink is
// refused, and nothing is bound, created or chmod'ed where it points.
func TestListenRefused(t *testing.T) {
	top, outside := t.TempDir(), t.TempDir()
	os.Chmod(outside, 0o755)
	os.Symlink(outside, filepath.Join(top, "link"))
	for _, sock := range []string{filepath.Join(top, "link", "ctl.sock"), filepath.Join(top, "link", "sub", "ctl.sock")} {
		ln, err := Listen(sock)
		if err == nil {
			ln.Close()
			t.Fatalf("Listen(%s) went through a symlink", sock)
		}
		if !errors.Is(err, privdir.ErrUnsafe) || !strings.Contains(err.Error(), "link is a symlink") {
			t.Errorf("Listen(%s): %v, want a refusal naming the symlink", sock, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("created where the symlink points: %v", ents)
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o755 {
		t.Errorf("the symlink's target's mode changed to %v", fi.Mode())
	}
}

// A turn's steps are served for any turn, "current" too (its pattern is
// the one POST begins a step on), and the changes outside turns at
// /v1/outside.
func TestStepsAndOutsideRoutes(t *testing.T) {
	for ref, path := range map[string]string{"7": "/v1/turns/7/steps", "c1": "/v1/turns/c1/steps", "current": "/v1/turns/current/steps"} {
		rec := serve("GET", path, nil)
		var l StepList
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &l) != nil || len(l.Steps) != 1 || l.Steps[0].ID != ref {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := serve("POST", "/v1/turns/current/steps", []byte(`{"id": "s1", "name": "Bash"}`)); rec.Code != 201 {
		t.Errorf("POST a step: %d %s", rec.Code, rec.Body)
	}
	rec := serve("GET", "/v1/outside", nil)
	var o OutsideChanges
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &o) != nil || o.Changes == nil {
		t.Errorf("GET /v1/outside: %d %s", rec.Code, rec.Body)
	}
}
