// Package human writes values for people to read, the same way in every
// part of cowfs that talks to them (the CLI, the MCP server's text, the
// hooks' messages, the daemon's refusals): a count with its noun, a size
// in binary units, a name quoted when it is not printable, a shell
// command a person can paste. JSON output never goes through it: it is
// exact.
//
// Imports: the standard library only.
package human

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Count is n and the noun for it: "1 path", "2 paths", "0 paths".
func Count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, Plural(n, one, many))
}

// Plural is the noun for n things.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Bytes formats n as 512 B, 1.5 KiB, 3.2 MiB …
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Shown is s as text shows it: as it is if it is made of printable
// characters, else Go-quoted, so that control characters, ANSI escapes,
// bidirectional overrides and bytes that are not UTF-8 in a file name
// (or a process's command) appear as escapes and cannot rewrite the
// reader's terminal or slip a line into the text.
func Shown(s string) string {
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

// ShellWord is s as one POSIX shell word: as it is if it holds only
// characters no shell treats specially, else in single quotes.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellCommand is args as one shell command line, each argument a
// ShellWord.
func ShellCommand(args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = ShellWord(a)
	}
	return strings.Join(quoted, " ")
}
