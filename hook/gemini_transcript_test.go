package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A session file as Gemini CLI writes it: metadata, the session context
// set as messages, a prompt, a reply appended twice (updated), a
// rewind of the reply, and a second reply.
const sessionFile = `{"sessionId":"0123abcd-0000-4000-8000-000000000001","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}
{"$set":{"messages":[{"id":"ctx","type":"user","content":[{"text":"<session_context>"}]}]}}
{"id":"p1","type":"user","content":[{"text":"PROMPT-1"}]}
{"$set":{"lastUpdated":"t"}}
{"id":"r1","type":"gemini","content":""}
{"id":"r1","type":"gemini","content":"","toolCalls":[]}
{"id":"f1","type":"user","content":[{"functionResponse":{}}]}
{"$rewindTo":"f1"}
{"id":"r2","type":"gemini","content":"done"}
not json
`

func writeSession(t *testing.T, home, content string) string {
	dir := filepath.Join(home, ".gemini", "tmp", "ws", "chats")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "session-2026-12-06T07-22-0123abcd.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTranscript(t *testing.T) {
	p := writeSession(t, t.TempDir(), sessionFile)
	tr, err := readTranscript(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tr.IDs, " "); got != "ctx p1 r1 r2" || tr.SessionID != "0123abcd-0000-4000-8000-000000000001" {
		t.Errorf("messages %q, session %q; want ctx p1 r1 r2", got, tr.SessionID)
	}
	if tr.lastMessage() != "r2" {
		t.Errorf("last message %q", tr.lastMessage())
	}
	if a := GeminiAnchor(GeminiInput{SessionID: "s", TranscriptPath: p}); a != "s/r2" {
		t.Errorf("anchor %q; want s/r2", a)
	}
	if a := GeminiAnchor(GeminiInput{SessionID: "s"}); a != "s" {
		t.Errorf("anchor without a transcript %q; want s", a)
	}
}

func TestGeminiResumePoint(t *testing.T) {
	home := t.TempDir()
	const sid = "0123abcd-0000-4000-8000-000000000001"
	p := writeSession(t, home, sessionFile)
	found, err := FindGeminiTranscript(home, sid)
	if err != nil || found != p {
		t.Fatalf("FindGeminiTranscript: %q, %v; want %s", found, err, p)
	}
	if _, err := FindGeminiTranscript(home, "0123abcd-ffff-4000-8000-000000000001"); err == nil {
		t.Errorf("FindGeminiTranscript found a session with another id")
	}
	// The turn began after the session context: its prompt and all
	// after it go.
	r, err := GeminiResumePoint(sid+"/ctx", home, "")
	if err != nil || r.RewindTo != "p1" || r.Transcript != p || r.Command() != "gemini --resume "+sid {
		t.Fatalf("resume point: %+v, %v; want a rewind to p1 in %s", r, err, p)
	}
	if err := r.Truncate(); err != nil {
		t.Fatal(err)
	}
	tr, _ := readTranscript(p)
	if got := strings.Join(tr.IDs, " "); got != "ctx" {
		t.Errorf("after the rewind: %q; want ctx", got)
	}
	if r, err := GeminiResumePoint(sid+"/ctx", home, p); err != nil || r.RewindTo != "" {
		t.Errorf("again: %+v, %v; want nothing to drop", r, err)
	}
	if _, err := GeminiResumePoint(sid+"/p1", home, p); err == nil {
		t.Errorf("a resume point the conversation no longer holds was found")
	}
	if _, err := GeminiResumePoint("cc-1234", home, p); err == nil {
		t.Errorf("an anchor of another agent's hooks was taken")
	}
}

func TestGeminiStepIDAndAnchor(t *testing.T) {
	if id := GeminiStepID(GeminiInput{ToolName: "write_file", Timestamp: "2026-12-06T07:22:10.253Z"}); id != "write_file@07:22:10.253" {
		t.Errorf("step id %q", id)
	}
	sid, last, err := GeminiAnchorParts("0123abcd-0000/ctx")
	if sid != "0123abcd-0000" || last != "ctx" || err != nil {
		t.Errorf("split: %q %q %v", sid, last, err)
	}
	if _, _, err := GeminiAnchorParts("msg-42"); err == nil {
		t.Errorf("an anchor of another harness split as Gemini's")
	}
}

// TestGeminiTranscriptOfAResumedSession: a session resumed in a later
// minute is written to a file of that minute's name; the session file
// found is the one written last, not the first by name.
func TestGeminiTranscriptOfAResumedSession(t *testing.T) {
	home := t.TempDir()
	t.Setenv("GEMINI_CLI_HOME", "")
	old := writeSession(t, home, sessionFile)
	newer := filepath.Join(filepath.Dir(old), "session-2026-12-06T07-23-0123abcd.jsonl")
	if err := os.WriteFile(newer, []byte(sessionFile), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	os.Chtimes(old, past, past)
	got, err := FindGeminiTranscript(home, "0123abcd-0000-4000-8000-000000000001")
	if err != nil || got != newer {
		t.Errorf("found %q, %v; want %s", got, err, newer)
	}
	// Written the other way round, the older name is the session's.
	os.Chtimes(old, time.Now(), time.Now())
	os.Chtimes(newer, past, past)
	if got, _ := FindGeminiTranscript(home, "0123abcd-0000-4000-8000-000000000001"); got != old {
		t.Errorf("found %q; want %s", got, old)
	}
}
