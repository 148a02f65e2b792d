package main

import (
	"testing"

	"github.com/cowfs/cowfs/human"
)

// TestShown: names that could rewrite a terminal are shown escaped;
// everything printable, in any script, as it is.
func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"src/main.go":           "src/main.go",
		"héllo wörld/日本.txt":    "héllo wörld/日本.txt",
		"with space":            "with space",
		"":                      "",
		"\x1b[31mred\x1b[0m":    `"\x1b[31mred\x1b[0m"`,
		"new\nline":             `"new\nline"`,
		"tab\there":             `"tab\there"`,
		"evil\u202etxt.exe":     `"evil\u202etxt.exe"`, // right-to-left override
		"zero\u200bwidth":       `"zero\u200bwidth"`,
		"bad\xffbyte":           `"bad\xffbyte"`,
		"bell\a":                `"bell\a"`,
		"del\x7f":               `"del\x7f"`,
		"c1\u009bcontrol":       `"c1\u009bcontrol"`,
		"quote\"is printable":   "quote\"is printable",
		"back\\slash printable": "back\\slash printable",
	} {
		if got := human.Shown(in); got != want {
			t.Errorf("human.Shown(%q) = %s, want %s", in, got, want)
		}
	}
}
