package hook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Claude Code keeps each session's conversation in a transcript,
// CONFIG/projects/DIR/SESSION.jsonl (CONFIG is $CLAUDE_CONFIG_DIR or
// ~/.claude, DIR the project's directory with its separators replaced):
// one JSON entry a line, each message with a uuid and the uuid of the
// entry before it (parentUuid), user messages with the prompt id they
// answer. `claude --resume SESSION --resume-session-at UUID` continues
// the conversation from the entry UUID, leaving out every entry after
// it.

// ClaudeResume is where Claude Code picks a conversation up so that it
// ends where a turn began.
type ClaudeResume struct {
	Session    string `json:"session_id"`
	Transcript string `json:"transcript,omitempty"`
	// At is the uuid of the last entry kept: the one before the turn's
	// prompt. Empty: the prompt began the session, and nothing of the
	// session comes before it.
	At string `json:"resume_session_at,omitempty"`
}

// Command is the command line that resumes there; "" if nothing is
// kept (start a new session).
func (r ClaudeResume) Command() string {
	if r.At == "" {
		return ""
	}
	return "claude --resume " + r.Session + " --resume-session-at " + r.At
}

// ClaudeConfigDir is Claude Code's configuration directory:
// $CLAUDE_CONFIG_DIR, else ~/.claude.
func ClaudeConfigDir() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".claude")
}

// ErrNoClaudeTranscript: the session's transcript is not where Claude Code
// keeps transcripts.
var ErrNoClaudeTranscript = errors.New("no transcript of the session")

// ClaudeTranscript returns the path of session's transcript under the
// configuration directory config.
func ClaudeTranscript(config, session string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(config, "projects", "*", session+".jsonl"))
	if len(m) == 0 {
		return "", fmt.Errorf("%w %s under %s", ErrNoClaudeTranscript, session, filepath.Join(config, "projects"))
	}
	return m[0], nil
}

// transcriptEntry is what ClaudeResumePoint reads of an entry.
type transcriptEntry struct {
	Type        string  `json:"type"`
	UUID        string  `json:"uuid"`
	ParentUUID  *string `json:"parentUuid"`
	PromptID    string  `json:"promptId"`
	IsSidechain bool    `json:"isSidechain"`
}

// ErrPromptNotInTranscript: the anchor's prompt is not in the
// transcript (it was blocked, or the transcript was cut).
var ErrPromptNotInTranscript = errors.New("the turn's prompt is not in the transcript")

// ClaudeResumePoint returns where to resume the session the anchor
// names so that the conversation ends before the anchor's prompt. It
// reads the transcript at path: the prompt's first entry names the
// entry before it. An anchor whose second part is an entry's uuid
// rather than a prompt id resumes at that entry.
func ClaudeResumePoint(anchor, path string) (ClaudeResume, error) {
	session, prompt, err := ClaudeAnchorParts(anchor)
	if err != nil {
		return ClaudeResume{}, err
	}
	r := ClaudeResume{Session: session, Transcript: path}
	if prompt == "" {
		return r, fmt.Errorf("the turn's anchor %q names no prompt (the hook had no prompt_id): where the conversation stood is not known", anchor)
	}
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	needle := []byte(prompt)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && bytes.Contains(line, needle) {
			var e transcriptEntry
			if json.Unmarshal(line, &e) == nil && !e.IsSidechain {
				switch {
				case e.UUID == prompt:
					r.At = e.UUID
					return r, nil
				case e.PromptID == prompt && e.Type == "user":
					if e.ParentUUID != nil {
						r.At = *e.ParentUUID
					}
					return r, nil
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return r, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return r, fmt.Errorf("%w: prompt %s in %s", ErrPromptNotInTranscript, prompt, path)
}
