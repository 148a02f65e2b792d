package hook

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Gemini CLI records a session in a JSON Lines file (the hooks'
// transcript_path, under ~/.gemini/tmp/PROJECT/chats/): a line of
// session metadata, then records appended as the conversation goes —
// a message ({"id": …, "type": "user"|"gemini"|…}, appended again
// whenever it is updated), metadata ({"$set": {…}}, whose "messages",
// if present, replace the whole list), and rewinds ({"$rewindTo": ID}:
// that message and every one after it are gone). The CLI's own /rewind
// appends such a record; so does cowfs to truncate the conversation
// after a rollback, the same way and to the same effect.

// transcript is a session's conversation as the CLI would load it.
type transcript struct {
	SessionID string
	IDs       []string // its messages, in order
}

// transcriptLine is what readTranscript reads of a record.
type transcriptLine struct {
	ID        *string           `json:"id"`
	RewindTo  *string           `json:"$rewindTo"`
	SessionID string            `json:"sessionId"`
	Messages  []json.RawMessage `json:"messages"`
	Set       *struct {
		Messages *[]transcriptMessage `json:"messages"`
	} `json:"$set"`
}

type transcriptMessage struct {
	ID string `json:"id"`
}

// maxTranscriptLine bounds a record; a message carries a tool's whole
// output, so lines can be large.
const maxTranscriptLine = 64 << 20

// readTranscript reads the session file at path.
func readTranscript(path string) (transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return transcript{}, err
	}
	defer f.Close()
	var tr transcript
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			tr.IDs = append(tr.IDs, id)
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxTranscriptLine)
	for sc.Scan() {
		var l transcriptLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // as the CLI does: a damaged line is skipped
		}
		switch {
		case l.RewindTo != nil:
			i := index(tr.IDs, *l.RewindTo)
			if i < 0 {
				i = 0 // the CLI clears a conversation rewound to a message it does not hold
			}
			for _, id := range tr.IDs[i:] {
				delete(seen, id)
			}
			tr.IDs = tr.IDs[:i]
		case l.ID != nil:
			add(*l.ID)
		case l.Set != nil && l.Set.Messages != nil:
			tr.IDs, seen = nil, map[string]bool{}
			for _, m := range *l.Set.Messages {
				add(m.ID)
			}
		case l.SessionID != "":
			tr.SessionID = l.SessionID
			for _, raw := range l.Messages {
				var m transcriptMessage
				if json.Unmarshal(raw, &m) == nil {
					add(m.ID)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return tr, fmt.Errorf("reading %s: %w", path, err)
	}
	return tr, nil
}

func index(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// lastMessage is the id of the conversation's last message, "" if it
// has none.
func (tr transcript) lastMessage() string {
	if len(tr.IDs) == 0 {
		return ""
	}
	return tr.IDs[len(tr.IDs)-1]
}

// after returns the message that follows id ("": the first), the one
// a rewind to just after id removes first.
func (tr transcript) after(id string) (string, bool) {
	i := 0
	if id != "" {
		if i = index(tr.IDs, id); i < 0 {
			return "", false
		}
		i++
	}
	if i >= len(tr.IDs) {
		return "", false
	}
	return tr.IDs[i], true
}

// ErrNoGeminiTranscript: the session's file is not where Gemini CLI keeps it.
var ErrNoGeminiTranscript = errors.New("no Gemini CLI session file found")

// FindGeminiTranscript finds the file of session sid under the Gemini CLI's
// home ($GEMINI_CLI_HOME, else home): ~/.gemini/tmp/*/chats/, whose
// session files end in the session id's first 8 characters.
func FindGeminiTranscript(home, sid string) (string, error) {
	if h := os.Getenv("GEMINI_CLI_HOME"); h != "" {
		home = h
	}
	if len(sid) < 8 || strings.ContainsAny(sid, `/\*?[`) {
		return "", fmt.Errorf("%w: %q is no session id", ErrNoGeminiTranscript, sid)
	}
	matches, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+sid[:8]+".jsonl"))
	// A session resumed in a later minute is written to a file of that
	// minute's name: the one written last is the session as it stands.
	found, newest := "", time.Time{}
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil || !fi.ModTime().After(newest) {
			continue
		}
		if tr, err := readTranscript(m); err == nil && tr.SessionID == sid {
			found, newest = m, fi.ModTime()
		}
	}
	if found != "" {
		return found, nil
	}
	return "", fmt.Errorf("%w for session %s under %s", ErrNoGeminiTranscript, sid, filepath.Join(home, ".gemini", "tmp"))
}

// appendRewind appends a rewind to message id to the session file at
// path: the message and all after it leave the conversation.
func appendRewind(path, id string) error {
	b, _ := json.Marshal(map[string]string{"$rewindTo": id})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("appending to %s: %w", path, err)
	}
	return f.Close()
}
