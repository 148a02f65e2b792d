package anthropicapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
)

var messageSeq atomic.Uint64

// blocks returns a reply's content blocks, as the API gives them.
func (r Reply) blocks() []map[string]any {
	var out []map[string]any
	if r.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": r.Text})
	}
	for _, t := range r.Tools {
		in := t.Input
		if in == nil {
			in = map[string]any{}
		}
		out = append(out, map[string]any{"type": "tool_use", "id": t.ID, "name": t.Name, "input": in})
	}
	return out
}

func (r Reply) stopReason() string {
	if len(r.Tools) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func usage() map[string]int {
	return map[string]int{"input_tokens": 10, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

// message1 is the non-streaming reply: one Message object.
func message1(model string, r Reply) map[string]any {
	return map[string]any{
		"id":            fmt.Sprintf("msg_mock%06d", messageSeq.Add(1)),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       r.blocks(),
		"stop_reason":   r.stopReason(),
		"stop_sequence": nil,
		"usage":         usage(),
	}
}

// stream writes the reply as the API's server-sent events:
// message_start, each block's start, delta and stop, message_delta
// with the stop reason, message_stop.
func stream(w http.ResponseWriter, model string, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if f != nil {
			f.Flush()
		}
	}
	start := message1(model, Reply{})
	start["content"] = []any{}
	start["stop_reason"] = nil
	event("message_start", map[string]any{"type": "message_start", "message": start})
	for i, b := range r.blocks() {
		switch b["type"] {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
