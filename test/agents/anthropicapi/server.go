package anthropicapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// ToolUse is a tool call the model makes.
type ToolUse struct {
	ID    string // tool_use id: unique in the conversation
	Name  string // "Bash", "Write", "Edit" …
	Input any    // marshalled as the tool's input
}

// Reply is one answer of the model: text, then tool calls. A reply
// with tool calls stops for tool use; one without ends the turn.
type Reply struct {
	Text  string
	Tools []ToolUse
}

// Script is the model's side of one user prompt.
type Script struct {
	// Match is a substring of the prompt's text that picks this script.
	Match string
	// Replies: to the prompt, then to each round of tool results. Past
	// the last, the model says "Done." and ends the turn.
	Replies []Reply
}

// Request is one request the server received.
type Request struct {
	Method, Path string
	Body         []byte
}

// Server is the mock API. Its methods are safe for concurrent use.
type Server struct {
	URL     string // http://127.0.0.1:PORT
	Addr    string // 127.0.0.1:PORT
	scripts []Script
	ln      net.Listener
	srv     *http.Server

	mu       sync.Mutex
	requests []Request
	stray    []string
}

// Start serves scripts on a free port of 127.0.0.1.
func Start(scripts []Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String(), scripts: scripts, ln: ln}
	s.URL = "http://" + s.Addr
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns what the server has received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Stray returns the requests meant for other hosts (through the proxy)
// or for endpoints the mock does not know: what a client tried beyond
// the mock.
func (s *Server) Stray() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.stray...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Body: body})
	s.mu.Unlock()
	if r.Method == http.MethodConnect || (r.URL.Host != "" && r.URL.Host != s.Addr) || (r.Host != "" && r.Host != s.Addr && !strings.HasPrefix(r.Host, "localhost")) {
		s.refuse(w, r.Method+" "+r.Host+r.URL.Path)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]int{"input_tokens": len(body)/4 + 1})
	default:
		s.refuse(w, r.Method+" "+r.URL.Path)
	}
}

// refuse answers a request the mock does not serve, and records it.
func (s *Server) refuse(w http.ResponseWriter, what string) {
	s.mu.Lock()
	s.stray = append(s.stray, what)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not served by the mock"}}`)
}

// messagesRequest is what the mock reads of a Messages API request.
type messagesRequest struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []message `json:"messages"`
	Tools    []any     `json:"tools"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the text of a message's text blocks (or its string
// content), tool results left out.
func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (s *Server) messages(w http.ResponseWriter, body []byte) {
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error())
		return
	}
	reply := s.reply(req)
	if req.Model == "" {
		req.Model = "claude-mock"
	}
	if req.Stream {
		stream(w, req.Model, reply)
		return
	}
	writeJSON(w, message1(req.Model, reply))
}

// reply picks the script's reply the request is at.
func (s *Server) reply(req messagesRequest) Reply {
	if len(req.Tools) == 0 {
		return Reply{Text: "Mock reply."}
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		text := m.text()
		for _, sc := range s.scripts {
			if sc.Match == "" || !strings.Contains(text, sc.Match) {
				continue
			}
			n := 0
			for _, later := range req.Messages[i+1:] {
				if later.Role == "assistant" {
					n++
				}
			}
			if n < len(sc.Replies) {
				return sc.Replies[n]
			}
			return Reply{Text: "Done."}
		}
	}
	return Reply{Text: "No script for this prompt."}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
