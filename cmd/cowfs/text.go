package main

import (
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

// shownPath is a path as shown.
func shownPath(p ctl.Path) string { return human.Shown(string(p)) }

// maxLabel is how many characters of an id or anchor a table shows.
// A table with two of them (log) then fits 100 columns.
const maxLabel = 14

// shortLabel is an id or anchor as shown, shortened to maxLabel
// characters: its start and its end around an ellipsis. Both ends,
// because harnesses' ids often share a long start (a session id, then
// a counter) or a long end.
func shortLabel(s string) string {
	r := []rune(human.Shown(s))
	if len(r) <= maxLabel {
		return string(r)
	}
	const tail = 5
	return string(r[:maxLabel-1-tail]) + "…" + string(r[len(r)-tail:])
}
