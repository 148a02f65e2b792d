package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Service is what the daemon does for the control socket. Errors that
// are an *Error reach the client as they are; any other is reported as
// internal.
type Service interface {
	Status(ctx context.Context) (Status, error)
	BeginTurn(ctx context.Context, req BeginTurnRequest) (Turn, error)
	EndTurn(ctx context.Context) (Turn, error)
	Turns(ctx context.Context) (TurnList, error)
	// Turn describes a turn and its changes; with step, only the
	// changes made in that step.
	Turn(ctx context.Context, ref, step string) (TurnDetail, error)
	// Steps lists a turn's steps and what each changed.
	Steps(ctx context.Context, ref string) (StepList, error)
	// Outside lists the changes made while no turn was open.
	Outside(ctx context.Context) (OutsideChanges, error)
	// Content returns the content path had when turn at began.
	Content(ctx context.Context, at, path string) (io.ReadCloser, error)
	// Rollback rolls the workspace back to before a turn, or plans it.
	Rollback(ctx context.Context, req RollbackRequest) (RollbackResult, error)
	// Unrevert undoes the last rollback since the last turn began.
	Unrevert(ctx context.Context, req UnrevertRequest) (RollbackResult, error)
	// Markers lists the conversation truncation markers.
	Markers(ctx context.Context) (MarkerList, error)
	// BeginStep marks a step (tool call) of the open turn.
	BeginStep(ctx context.Context, req StepRequest) (StepStarted, error)
	// Events calls emit for every event after since, in order; with
	// follow it then waits for more until ctx is done.
	Events(ctx context.Context, since uint64, follow bool, emit func(Event) error) error
	// Diff shows what changed between two points.
	Diff(ctx context.Context, req DiffRequest) (Diff, error)
	// Shutdown unmounts the workspace and stops the daemon.
	Shutdown(ctx context.Context) error
	// Purge stops the daemon and then removes everything it keeps for
	// the workspace: its private directory, journal and state.
	Purge(ctx context.Context) (Purged, error)
}

// maxBody caps request bodies.
const maxBody = 64 << 10

// Server serves a Service on a Unix socket (Serve) and, beside it, over
// mutual TLS (ServeRemote): one handler for both.
type Server struct {
	svc  Service
	log  *slog.Logger
	http *http.Server
}

// NewServer returns a server for svc. log may be nil.
func NewServer(svc Service, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{svc: svc, log: log}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ConnContext:       withPeer,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return s
}

// Serve serves connections from ln until Close, at most connCap of
// them at once (see MaxConns).
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(newCapListener(ln, connCap()))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server, letting requests in flight finish for a moment.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if s.http.Shutdown(ctx) != nil {
		s.http.Close()
	}
}

// routes maps each endpoint, a method and a path pattern, to its
// handler; what no pattern takes is answered by unrouted.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	var methods []string // every method some endpoint takes
	route := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		method, _, _ := strings.Cut(pattern, " ")
		if !slices.Contains(methods, method) {
			methods = append(methods, method)
		}
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				writeError(w, s.log, err, 0)
			}
		})
	}
	route("GET /v1/status", func(w http.ResponseWriter, r *http.Request) error {
		st, err := s.svc.Status(r.Context())
		return reply(w, http.StatusOK, st, err)
	})
	route("GET /v1/turns", func(w http.ResponseWriter, r *http.Request) error {
		ts, err := s.svc.Turns(r.Context())
		return reply(w, http.StatusOK, ts, err)
	})
	route("POST /v1/turns", func(w http.ResponseWriter, r *http.Request) error {
		var req BeginTurnRequest
		if err := decode(w, r, &req); err != nil {
			return err
		}
		if err := checkLabel("turn id", req.ID, MaxIDBytes); err != nil {
			return err
		}
		if err := checkLabel("anchor", req.Anchor, MaxAnchorBytes); err != nil {
			return err
		}
		t, err := s.svc.BeginTurn(r.Context(), req)
		return reply(w, http.StatusCreated, t, err)
	})
	route("POST /v1/turns/current/end", func(w http.ResponseWriter, r *http.Request) error {
		if err := decode(w, r, &struct{}{}); err != nil {
			return err
		}
		t, err := s.svc.EndTurn(r.Context())
		return reply(w, http.StatusOK, t, err)
	})
	route("GET /v1/turns/{ref}", func(w http.ResponseWriter, r *http.Request) error {
		if err := checkLabel("turn", r.PathValue("ref"), MaxIDBytes); err != nil {
			return err
		}
		if err := checkLabel("step", r.URL.Query().Get("step"), MaxIDBytes); err != nil {
			return err
		}
		d, err := s.svc.Turn(r.Context(), r.PathValue("ref"), r.URL.Query().Get("step"))
		return reply(w, http.StatusOK, d, err)
	})
	route("GET /v1/turns/{ref}/steps", func(w http.ResponseWriter, r *http.Request) error {
		ref := r.PathValue("ref")
		if err := checkLabel("turn", ref, MaxIDBytes); err != nil {
			return err
		}
		l, err := s.svc.Steps(r.Context(), ref)
		return reply(w, http.StatusOK, l, err)
	})
	route("GET /v1/outside", func(w http.ResponseWriter, r *http.Request) error {
		o, err := s.svc.Outside(r.Context())
		return reply(w, http.StatusOK, o, err)
	})
	route("GET /v1/content", func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		if q.Get("at") == "" || q.Get("path") == "" {
			return Errorf(CodeBadRequest, "content needs ?at=TURN&path=PATH")
		}
		if err := checkLabel("turn", q.Get("at"), MaxIDBytes); err != nil {
			return err
		}
		rc, err := s.svc.Content(r.Context(), q.Get("at"), q.Get("path"))
		if err != nil {
			return err
		}
		defer rc.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		io.Copy(w, rc)
		return nil
	})
	route("POST /v1/rollback", func(w http.ResponseWriter, r *http.Request) error {
		var req RollbackRequest
		if err := decode(w, r, &req); err != nil {
			return err
		}
		if req.To == "" {
			return Errorf(CodeBadRequest, "rollback needs \"to\": the turn to roll back to before")
		}
		if err := checkLabel("turn", string(req.To), MaxIDBytes); err != nil {
			return err
		}
		res, err := s.svc.Rollback(r.Context(), req)
		return reply(w, http.StatusOK, res, err)
	})
	route("POST /v1/unrevert", func(w http.ResponseWriter, r *http.Request) error {
		var req UnrevertRequest
		if err := decode(w, r, &req); err != nil {
			return err
		}
		res, err := s.svc.Unrevert(r.Context(), req)
		return reply(w, http.StatusOK, res, err)
	})
	route("GET /v1/markers", func(w http.ResponseWriter, r *http.Request) error {
		ms, err := s.svc.Markers(r.Context())
		return reply(w, http.StatusOK, ms, err)
	})
	route("POST /v1/turns/current/steps", func(w http.ResponseWriter, r *http.Request) error {
		var req StepRequest
		if err := decode(w, r, &req); err != nil {
			return err
		}
		if req.ID == "" {
			return Errorf(CodeBadRequest, "a step needs an id")
		}
		if err := checkLabel("step id", req.ID, MaxIDBytes); err != nil {
			return err
		}
		if err := checkLabel("step name", req.Name, MaxIDBytes); err != nil {
			return err
		}
		st, err := s.svc.BeginStep(r.Context(), req)
		return reply(w, http.StatusCreated, st, err)
	})
	route("GET /v1/events", func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		since, err := uintParam(q.Get("since"), "since")
		if err != nil {
			return err
		}
		follow, err := boolParam(q.Get("follow"), "follow")
		if err != nil {
			return err
		}
		return s.events(w, r, since, follow)
	})
	route("GET /v1/diff", func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		if q.Get("from") == "" {
			return Errorf(CodeBadRequest, "diff needs ?from=TURN")
		}
		for _, k := range []string{"from", "to", "step"} {
			if err := checkLabel(k, q.Get(k), MaxIDBytes); err != nil {
				return err
			}
		}
		stat, err := boolParam(q.Get("stat"), "stat")
		if err != nil {
			return err
		}
		d, err := s.svc.Diff(r.Context(), DiffRequest{From: TurnRef(q.Get("from")), To: q.Get("to"), Step: q.Get("step"), Stat: stat})
		return reply(w, http.StatusOK, d, err)
	})
	route("DELETE /v1/journal", func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.svc.Purge(r.Context())
		return reply(w, http.StatusOK, p, err)
	})
	route("POST /v1/shutdown", func(w http.ResponseWriter, r *http.Request) error {
		if err := decode(w, r, &struct{}{}); err != nil {
			return err
		}
		err := s.svc.Shutdown(r.Context())
		return reply(w, http.StatusAccepted, struct{}{}, err)
	})
	return s.checkPeer(s.unrouted(mux, methods))
}

// unrouted answers, in the API's JSON shape, the requests mux has no
// endpoint for, which ServeMux would answer in text: a path that some
// endpoint has but not with this method is bad_request with 405 and an
// Allow header, any other not_found. HEAD is one of them: ServeMux
// serves it with a GET endpoint, and no endpoint here means it (a HEAD
// of /v1/events?follow=1 would stream to nobody).
func (s *Server) unrouted(mux *http.ServeMux, methods []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The pattern is empty when none matches; a path to clean up
		// matches the pattern mux redirects to.
		if _, pattern := mux.Handler(r); pattern != "" && r.Method != http.MethodHead {
			mux.ServeHTTP(w, r)
			return
		}
		var allow []string
		for _, m := range methods {
			if _, pattern := mux.Handler(&http.Request{Method: m, Host: r.Host, URL: r.URL}); pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			writeError(w, s.log, Errorf(CodeNotFound, "no endpoint %s %s", r.Method, r.URL.Path), 0)
			return
		}
		sort.Strings(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, s.log, Errorf(CodeBadRequest, "%s takes %s, not %s", r.URL.Path, strings.Join(allow, " or "), r.Method), http.StatusMethodNotAllowed)
	})
}

func uintParam(v, name string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, Errorf(CodeBadRequest, "%s must be a number, not %q", name, v)
	}
	return n, nil
}

func boolParam(v, name string) (bool, error) {
	switch v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, Errorf(CodeBadRequest, "%s must be 1 or 0, not %q", name, v)
}

// decode reads a JSON body into v: at most maxBody bytes, no unknown
// fields, nothing after the value. An empty body is an empty object.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &tooBig):
			return Errorf(CodeBadRequest, "request body over %d bytes", maxBody)
		default:
			return Errorf(CodeBadRequest, "request body: %v", err)
		}
	}
	if dec.More() {
		return Errorf(CodeBadRequest, "request body: data after the JSON value")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Errorf(CodeBadRequest, "request body: data after the JSON value")
	}
	return nil
}

func reply(w http.ResponseWriter, status int, v any, err error) error {
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if s, ok := v.(interface{ WriteJSON(io.Writer) error }); ok {
		return s.WriteJSON(w) // a large reply, written as it is encoded
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// statusOf is the HTTP status each error code is sent with.
var statusOf = map[string]int{
	CodeBadRequest:  http.StatusBadRequest,
	CodeNotFound:    http.StatusNotFound,
	CodeBusy:        http.StatusConflict,
	CodeConflict:    http.StatusConflict,
	CodeOutOfWindow: http.StatusGone,
	CodeForbidden:   http.StatusForbidden,
	CodeInternal:    http.StatusInternalServerError,
}

func writeError(w http.ResponseWriter, log *slog.Logger, err error, status int) {
	var e *Error
	if !errors.As(err, &e) {
		log.Error("request failed", "err", err)
		e = &Error{Code: CodeInternal, Message: err.Error()}
	}
	if status == 0 {
		status = statusOf[e.Code]
		if status == 0 {
			status = http.StatusInternalServerError
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(errorBody{Error: e})
}
