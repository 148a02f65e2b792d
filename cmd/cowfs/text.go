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
