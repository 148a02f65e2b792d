package main

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/cowfs/cowfs/ctl"
)

// shown is s as a terminal may print it: unchanged if it is valid UTF-8
// made of printable characters, else Go-quoted, so that control
// characters, ANSI escapes, bidirectional overrides and bytes that are
// not UTF-8 in a file name (or a process's command) appear as escapes
// and cannot rewrite the user's terminal. (JSON output is not escaped:
// it is exact, see ctl.Path.)
func shown(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// shownPath is a path as shown.
func shownPath(p ctl.Path) string { return shown(string(p)) }

// maxLabel is how many characters of an id or anchor a table shows.
// A table with two of them (log) then fits 100 columns.
const maxLabel = 14

// shortLabel is an id or anchor as shown, shortened to maxLabel
// characters: its start and its end around an ellipsis. Both ends,
// because harnesses' ids often share a long start (a session id, then
// a counter) or a long end.
func shortLabel(s string) string {
	r := []rune(shown(s))
	if len(r) <= maxLabel {
		return string(r)
	}
	const tail = 5
	return string(r[:maxLabel-1-tail]) + "…" + string(r[len(r)-tail:])
}
