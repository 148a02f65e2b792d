package hook

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// idDigits is how much of the prompt id a turn id keeps: 32 random
// bits, unique among the turns of any window, and short enough that
// `cowfs log` stays narrow.
const idDigits = 8

// turnID is "cc-" and the first hex digits of the prompt id; without
// one (an older CLI), random digits.
func (h ClaudeHook) turnID(in ClaudeInput) string {
	var d []byte
	for _, c := range []byte(in.PromptID) {
		if len(d) == idDigits {
			break
		}
		if ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') {
			d = append(d, c)
		}
	}
	if len(d) < idDigits {
		return ClaudeTurnPrefix + h.newID()
	}
	return ClaudeTurnPrefix + string(d)
}

func randomID() string {
	var b [idDigits / 2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ClaudeAnchor is the anchor of the turn a prompt begins:
// "SESSION/PROMPT", the session id and the prompt id. Claude Code
// writes the prompt to the transcript only after the hook returns, so
// the message to resume at is looked up later, when a rollback needs
// it (ClaudeResumePoint): the transcript entry before the prompt's.
// Without a prompt id, the anchor is the session id alone.
func ClaudeAnchor(in ClaudeInput) string {
	if in.SessionID == "" || !printableLabel(in.SessionID) {
		return ""
	}
	if in.PromptID == "" || !printableLabel(in.PromptID) {
		return in.SessionID
	}
	return in.SessionID + "/" + in.PromptID
}

// printableLabel reports whether s can be part of an anchor: printable
// ASCII without spaces or slashes, as the CLI's ids are.
func printableLabel(s string) bool {
	if len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || c == '/' {
			return false
		}
	}
	return true
}

// ClaudeAnchorParts splits an anchor ClaudeAnchor made.
func ClaudeAnchorParts(anchor string) (session, prompt string, err error) {
	session, prompt, _ = strings.Cut(anchor, "/")
	if session == "" || !printableLabel(session) || (prompt != "" && !printableLabel(prompt)) {
		return "", "", fmt.Errorf("anchor %q was not set by the Claude Code hook (SESSION/PROMPT)", anchor)
	}
	return session, prompt, nil
}
