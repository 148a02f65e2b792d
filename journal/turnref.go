package journal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A turn is named two ways: by its number (1, 2, 3 … in the order turns
// began) or by the harness's own id. One string must never be able to
// mean both, or "rollback 7" could reach the turn a harness called "7"
// instead of turn 7 — or, with a number too large for 64 bits, reach an
// id while the user meant a number. So:
//
//   - plain decimal digits name a turn by number. Leading zeros are
//     read as decimal, as a person reads them: "07" is turn 7, never
//     octal;
//   - anything else that reads as a number — to a person, to Go's
//     strconv, or in JSON — is no reference at all: a sign ("-1",
//     "+5"), surrounding spaces (" 7"), a base prefix ("0x10", "0o7",
//     "0b1"), digit separators ("1_000"), a fraction or an exponent
//     ("1.5", "1e3"), and digits too many for 64 bits. These are
//     refused, never looked up as ids;
//   - every other string is an id;
//
// and an id may not read as a number in any of these ways (BeginTurn
// refuses it), so no id can ever be shadowed by a number. A string
// counts as reading as a number only if it holds a digit: "inf" and
// "nan", which strconv parses, are words to a person and may be ids.

// ParseTurnRef reads a turn reference: a turn number (byNumber), or an
// id. A reference that reads as a number but names no turn number
// fails with ErrInvalid, saying why.
func ParseTurnRef(ref string) (n uint64, byNumber bool, err error) {
	if decimal(ref) {
		n, err := strconv.ParseUint(ref, 10, 64)
		if err != nil {
			return 0, true, fmt.Errorf("%w: not a turn number: %q is larger than any turn number can be", ErrInvalid, ref)
		}
		return n, true, nil
	}
	if numeric(ref) {
		return 0, true, fmt.Errorf("%w: not a turn number: %q (turns are numbered 1, 2, 3 … in plain decimal digits, and no turn id reads as a number)", ErrInvalid, ref)
	}
	return 0, false, nil
}

// CheckTurnID refuses a turn id that reads as a number (see
// ParseTurnRef): it would be taken for a turn number, or refused as
// one, wherever a turn is named.
func CheckTurnID(id string) error {
	if numeric(id) {
		return fmt.Errorf("%w: turn id %q reads as a number; numbers name turns by position, so an id may not read as one (in decimal, with a sign, spaces, a 0x/0o/0b prefix, a fraction or an exponent)", ErrInvalid, id)
	}
	return nil
}

// decimal reports whether s is a non-empty run of ASCII digits.
func decimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// numeric reports whether s reads as a number: it holds a digit and,
// with surrounding white space trimmed, is an integer in Go's syntax
// (any base prefix, a sign, digit separators) or a floating-point
// number, however large. JSON's numbers are a subset of these.
func numeric(s string) bool {
	t := strings.TrimSpace(s)
	if !strings.ContainsAny(t, "0123456789") {
		return false
	}
	if _, err := strconv.ParseInt(t, 0, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return true
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return true
	}
	return false
}
