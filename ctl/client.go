package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrNotRunning: no daemon answers on the socket.
var ErrNotRunning = errors.New("no cowfs daemon is running for this workspace")

// ErrForeignServer: the process listening on the socket is neither
// root nor this client's uid. Errors that wrap it are *ForeignServerError.
var ErrForeignServer = errors.New("the control socket is served by another user")

// ForeignServerError names the socket and the uid that answered on it.
type ForeignServerError struct {
	Socket string
	Uid    uint32
}

func (e *ForeignServerError) Error() string {
	return fmt.Sprintf("refused: the control socket %s is served by uid %d, not by root or uid %d (this user): "+
		"a cowfs daemon runs as one of those; nothing was sent to it", e.Socket, e.Uid, os.Geteuid())
}

// Is makes errors.Is(err, ErrForeignServer) true.
func (e *ForeignServerError) Is(target error) bool { return target == ErrForeignServer }

// Client talks to a daemon over its control socket, or, made by
// NewRemote or DialRemote, over mutual TLS.
type Client struct {
	Socket string // the socket's path; empty for a remote client
	Remote string // https://HOST:PORT of a remote client
	base   string // what paths are appended to
	http   *http.Client
}

// NewClient returns a client for the socket at path. Every connection
// it makes is checked before a request goes out (CheckServer).
func NewClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				return nil, err
			}
			if err := CheckServer(c, path); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
		MaxIdleConns:    2,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{Socket: path, base: "http://cowfs", http: &http.Client{Transport: tr}}
}

// CheckServer checks, on a connection to the control socket at path,
// that the process listening is root or this process's uid
// (SO_PEERCRED), as a daemon is. A client must know who answers before
// it sends anything: a socket another user put at the path, or swapped
// in, would otherwise receive its requests and answer them.
func CheckServer(c net.Conn, path string) error {
	cred, err := peerCred(c)
	if err != nil {
		return fmt.Errorf("control socket %s: cannot tell who serves it: %w", path, err)
	}
	if cred.Uid != 0 && int(cred.Uid) != os.Geteuid() {
		return &ForeignServerError{Socket: path, Uid: cred.Uid}
	}
	return nil
}

// Status returns the daemon's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.do(ctx, "GET", "/v1/status", nil, &st)
}

// BeginTurn opens a turn.
func (c *Client) BeginTurn(ctx context.Context, req BeginTurnRequest) (Turn, error) {
	var t Turn
	return t, c.do(ctx, "POST", "/v1/turns", req, &t)
}

// EndTurn closes the open turn.
func (c *Client) EndTurn(ctx context.Context) (Turn, error) {
	var t Turn
	return t, c.do(ctx, "POST", "/v1/turns/current/end", struct{}{}, &t)
}

// Turns lists the turns in the window.
func (c *Client) Turns(ctx context.Context) (TurnList, error) {
	var l TurnList
	return l, c.do(ctx, "GET", "/v1/turns", nil, &l)
}

// Turn returns one turn, by number or id, with its changes (only those
// of step, if not empty).
func (c *Client) Turn(ctx context.Context, ref, step string) (TurnDetail, error) {
	var d TurnDetail
	p := "/v1/turns/" + url.PathEscape(ref)
	if step != "" {
		p += "?" + url.Values{"step": {step}}.Encode()
	}
	return d, c.do(ctx, "GET", p, nil, &d)
}

// Steps lists the steps of turn ref and what each changed.
func (c *Client) Steps(ctx context.Context, ref string) (StepList, error) {
	var l StepList
	return l, c.do(ctx, "GET", "/v1/turns/"+url.PathEscape(ref)+"/steps", nil, &l)
}

// Outside lists the changes made while no turn was open.
func (c *Client) Outside(ctx context.Context) (OutsideChanges, error) {
	var o OutsideChanges
	return o, c.do(ctx, "GET", "/v1/outside", nil, &o)
}

// Content returns the content path had when turn at began. The caller
// closes it.
func (c *Client) Content(ctx context.Context, at, path string) (io.ReadCloser, error) {
	q := url.Values{"at": {at}, "path": {path}}
	resp, err := c.send(ctx, "GET", "/v1/content?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Rollback rolls the workspace back to before a turn (or plans it).
func (c *Client) Rollback(ctx context.Context, req RollbackRequest) (RollbackResult, error) {
	var res RollbackResult
	return res, c.do(ctx, "POST", "/v1/rollback", req, &res)
}

// Unrevert undoes the last rollback since the last turn began.
func (c *Client) Unrevert(ctx context.Context, req UnrevertRequest) (RollbackResult, error) {
	var res RollbackResult
	return res, c.do(ctx, "POST", "/v1/unrevert", req, &res)
}

// Markers lists the conversation truncation markers.
func (c *Client) Markers(ctx context.Context) (MarkerList, error) {
	var l MarkerList
	return l, c.do(ctx, "GET", "/v1/markers", nil, &l)
}

// BeginStep marks a step (tool call) of the open turn.
func (c *Client) BeginStep(ctx context.Context, req StepRequest) (StepStarted, error) {
	var st StepStarted
	return st, c.do(ctx, "POST", "/v1/turns/current/steps", req, &st)
}

// Events calls fn for every event after since, in order; with follow it
// then waits for more until ctx is done or fn fails.
func (c *Client) Events(ctx context.Context, since uint64, follow bool, fn func(Event) error) error {
	q := url.Values{"since": {strconv.FormatUint(since, 10)}}
	if follow {
		q.Set("follow", "1")
	}
	resp, err := c.send(ctx, "GET", "/v1/events?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var e Event
		if err := dec.Decode(&e); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: events: %w", c.where(), err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// Diff shows what changed between two points.
func (c *Client) Diff(ctx context.Context, req DiffRequest) (Diff, error) {
	q := url.Values{"from": {string(req.From)}}
	if req.To != "" {
		q.Set("to", req.To)
	}
	if req.Step != "" {
		q.Set("step", req.Step)
	}
	if req.Stat {
		q.Set("stat", "1")
	}
	var d Diff
	return d, c.do(ctx, "GET", "/v1/diff?"+q.Encode(), nil, &d)
}

// Shutdown asks the daemon to unmount and exit.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.do(ctx, "POST", "/v1/shutdown", struct{}{}, nil)
}

// Purge asks the daemon to stop and remove the workspace's journal,
// state directory and private directory.
func (c *Client) Purge(ctx context.Context) (Purged, error) {
	var p Purged
	return p, c.do(ctx, "DELETE", "/v1/journal", nil, &p)
}

// where names what the client talks to, for errors.
func (c *Client) where() string {
	if c.Remote != "" {
		return c.Remote
	}
	return "control socket"
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s: bad reply to %s %s: %w", c.where(), method, path, err)
	}
	return nil
}

// send makes a request and turns error replies into *Error.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		var foreign *ForeignServerError
		if errors.As(err, &foreign) {
			return nil, foreign
		}
		if errors.As(err, &op) && op.Op == "dial" {
			if c.Remote != "" {
				return nil, fmt.Errorf("%w (none answers at %s: %w)", ErrNotRunning, c.Remote, op.Err)
			}
			return nil, fmt.Errorf("%w (socket %s)", ErrNotRunning, c.Socket)
		}
		if c.Remote != "" {
			return nil, remoteError(c.Remote, err)
		}
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb errorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil {
		return nil, eb.Error
	}
	return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))}
}
