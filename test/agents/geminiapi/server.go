package geminiapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Request is a request the mock received.
type Request struct {
	Method string // "streamGenerateContent", "generateContent", "countTokens", or the path
	Model  string
	Body   []byte
}

// Server is the mock, listening on 127.0.0.1.
type Server struct {
	URL    string // the base URL, for GOOGLE_GEMINI_BASE_URL
	script Script
	srv    *http.Server
	ln     net.Listener

	mu       sync.Mutex
	requests []Request
}

// Start serves script on a free port of 127.0.0.1 until Close.
func Start(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script, ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// generateRequest is the part of a request body the mock reads.
type generateRequest struct {
	Contents         []content `json:"contents"`
	GenerationConfig struct {
		ResponseMimeType string `json:"responseMimeType"`
	} `json:"generationConfig"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Paths are /v1beta/models/MODEL:METHOD.
	model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	if method == "" {
		method = r.URL.Path
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: method, Model: model, Body: body})
	s.mu.Unlock()

	var req generateRequest
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil {
		writeError(w, http.StatusNotFound, "the mock serves POST models/M:generateContent, :streamGenerateContent and :countTokens")
		return
	}
	switch method {
	case "countTokens":
		writeJSON(w, map[string]any{"totalTokens": len(body) / 4})
	case "generateContent":
		writeJSON(w, s.reply(req))
	case "streamGenerateContent":
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(s.reply(req))
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	default:
		writeError(w, http.StatusNotFound, "no such method: "+method)
	}
}

// reply answers a generate request: JSON for the CLI's side questions,
// else the script's next turn.
func (s *Server) reply(req generateRequest) map[string]any {
	var parts []map[string]any
	if req.GenerationConfig.ResponseMimeType == "application/json" {
		// One object that answers each question the CLI asks for JSON:
		// the router's complexity, the next-speaker check.
		parts = []map[string]any{{"text": `{"complexity_reasoning": "scripted", "complexity_score": 10, "reasoning": "scripted", "next_speaker": "user"}`}}
	} else if key, turn, calls := s.script.next(req.Contents); calls != nil {
		for i, c := range calls {
			parts = append(parts, map[string]any{"functionCall": functionCall{
				ID: fmt.Sprintf("call-%d-%d", turn+1, i+1), Name: c.Name, Args: c.Args}})
		}
	} else if key != "" {
		parts = []map[string]any{{"text": "Done: " + key + "."}}
	} else {
		parts = []map[string]any{{"text": "The script has no reply to this prompt."}}
	}
	return map[string]any{
		"candidates": []map[string]any{{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "mock",
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": http.StatusText(code)}})
}
