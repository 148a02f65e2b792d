package hook

import (
	"fmt"
	"strings"

	"github.com/cowfs/cowfs/human"
)

// GeminiResume is where a rollback to before a turn leaves the Gemini
// CLI conversation: the session, and the last message kept.
type GeminiResume struct {
	Session    string `json:"session"`
	Transcript string `json:"transcript"` // the session file
	// Keep is the last message kept ("": none); RewindTo the first one
	// dropped, "" if the conversation ends at Keep already.
	Keep     string `json:"keep"`
	RewindTo string `json:"rewind_to,omitempty"`
}

// GeminiAnchorParts splits an anchor GeminiAnchor made into the session
// id and the last message before the turn's prompt.
func GeminiAnchorParts(anchor string) (session, last string, err error) {
	session, last, ok := strings.Cut(anchor, "/")
	if !ok || session == "" || !printableLabel(session) {
		return "", "", fmt.Errorf("the turn's anchor %q is not one the Gemini CLI hooks made (SESSION/MESSAGE)", anchor)
	}
	return session, last, nil
}

// GeminiResumePoint finds where the conversation goes back to for a
// turn with anchor: in transcript, or the session's file under home
// (FindGeminiTranscript) if transcript is "". It fails if the
// conversation no longer holds the point (it was rewound past it), so
// that files and conversation are not parted.
func GeminiResumePoint(anchor, home, transcript string) (GeminiResume, error) {
	session, keep, err := GeminiAnchorParts(anchor)
	if err != nil {
		return GeminiResume{}, err
	}
	if transcript == "" {
		if transcript, err = FindGeminiTranscript(home, session); err != nil {
			return GeminiResume{}, err
		}
	}
	tr, err := readTranscript(transcript)
	if err != nil {
		return GeminiResume{}, err
	}
	if tr.SessionID != session {
		return GeminiResume{}, fmt.Errorf("%s holds session %s, not %s", transcript, tr.SessionID, session)
	}
	r := GeminiResume{Session: session, Transcript: transcript, Keep: keep}
	if keep != "" && index(tr.IDs, keep) < 0 {
		return r, fmt.Errorf("the conversation in %s no longer holds message %s, where the turn's prompt came (it was rewound past it)", transcript, keep)
	}
	r.RewindTo, _ = tr.after(keep)
	return r, nil
}

// Truncate drops the messages from RewindTo on, as the CLI's /rewind
// does: it appends a rewind record to the session file. Nothing to do
// if RewindTo is "".
func (r GeminiResume) Truncate() error {
	if r.RewindTo == "" {
		return nil
	}
	return appendRewind(r.Transcript, r.RewindTo)
}

// Command resumes the session from where it was truncated.
func (r GeminiResume) Command() string { return "gemini --resume " + human.ShellWord(r.Session) }
