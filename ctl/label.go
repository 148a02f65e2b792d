package ctl

import (
	"unicode"
	"unicode/utf8"
)

// Limits on the labels a harness gives: turn ids, anchors, step ids.
const (
	MaxIDBytes     = 256
	MaxAnchorBytes = 1024
)

// checkLabel checks a harness-given label (what names it in the
// message): valid UTF-8 of at most limit bytes, with no control or
// other non-printable characters (so no NUL, newline or terminal
// escape), no leading or trailing space. Empty is allowed where the
// label is optional; callers that need one check that themselves.
func checkLabel(what, s string, limit int) error {
	switch {
	case len(s) > limit:
		return Errorf(CodeBadRequest, "%s is %d bytes; at most %d", what, len(s), limit)
	case !utf8.ValidString(s):
		return Errorf(CodeBadRequest, "%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return Errorf(CodeBadRequest, "%s %q holds a control or non-printable character (U+%04X)", what, s, r)
		}
	}
	if s != "" && (s[0] == ' ' || s[len(s)-1] == ' ') {
		return Errorf(CodeBadRequest, "%s %q begins or ends with a space", what, s)
	}
	return nil
}
