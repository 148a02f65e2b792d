package anthropicapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start([]Script{{Match: "PROMPT-A", Replies: []Reply{
		{Text: "first", Tools: []ToolUse{{ID: "toolu_1", Name: "Bash", Input: map[string]any{"command": "true"}}}},
		{Text: "second"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func post(t *testing.T, s *Server, path, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const tools = `"tools": [{"name": "Bash"}]`

func TestScriptedReplies(t *testing.T) {
	s := start(t)
	var m struct {
		Content []struct {
			Type, Text, ID, Name string
		}
		StopReason string `json:"stop_reason"`
	}
	resp := post(t, s, "/v1/messages", `{"model": "m", `+tools+`, "messages": [{"role": "user", "content": [{"type": "text", "text": "PROMPT-A please"}]}]}`)
	json.NewDecoder(resp.Body).Decode(&m)
	if m.StopReason != "tool_use" || len(m.Content) != 2 || m.Content[1].ID != "toolu_1" {
		t.Fatalf("first reply %+v", m)
	}
	// After the tool's result: the next reply, whatever else the user
	// message holds.
	resp = post(t, s, "/v1/messages", `{"model": "m", `+tools+`, "messages": [
		{"role": "user", "content": "PROMPT-A please"},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]}`)
	m.Content = nil
	json.NewDecoder(resp.Body).Decode(&m)
	if m.StopReason != "end_turn" || len(m.Content) != 1 || m.Content[0].Text != "second" {
		t.Fatalf("second reply %+v", m)
	}
	// A side request, without tools, advances nothing.
	resp = post(t, s, "/v1/messages", `{"model": "m", "messages": [{"role": "user", "content": "PROMPT-A title?"}]}`)
	m.Content = nil
	json.NewDecoder(resp.Body).Decode(&m)
	if m.Content[0].Text != "Mock reply." {
		t.Fatalf("side reply %+v", m)
	}
}

func TestStreamedReply(t *testing.T) {
	s := start(t)
	resp := post(t, s, "/v1/messages", `{"model": "m", "stream": true, `+tools+`, "messages": [{"role": "user", "content": "PROMPT-A"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var events []string
	var input string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, ev)
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, "input_json_delta") {
			var d struct {
				Delta struct {
					PartialJSON string `json:"partial_json"`
				}
			}
			json.Unmarshal([]byte(data), &d)
			input = d.Delta.PartialJSON
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(events, " ") != want || input != `{"command":"true"}` {
		t.Fatalf("events %v, tool input %q", events, input)
	}
}

func TestCountTokensAndStray(t *testing.T) {
	s := start(t)
	var c struct {
		InputTokens int `json:"input_tokens"`
	}
	json.NewDecoder(post(t, s, "/v1/messages/count_tokens", `{"messages": []}`).Body).Decode(&c)
	if c.InputTokens <= 0 {
		t.Fatalf("count_tokens: %+v", c)
	}
	if resp := post(t, s, "/api/elsewhere", `{}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown endpoint: %s", resp.Status)
	}
	// As a proxy, it refuses what was meant for another host.
	proxy, _ := url.Parse(s.URL)
	cl := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	resp, err := cl.Get("http://example.invalid/x")
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	stray := s.Stray()
	if len(stray) != 2 || stray[0] != "POST /api/elsewhere" || !strings.Contains(stray[1], "example.invalid") {
		t.Fatalf("stray %v", stray)
	}
	if n := len(s.Requests()); n != 3 {
		t.Fatalf("%d requests recorded", n)
	}
}
