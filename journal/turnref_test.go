package journal

import (
	"errors"
	"testing"
	"time"
)

// TestParseTurnRef: decimal digits are turn numbers (leading zeros
// too); whatever else reads as a number is no reference; the rest are
// ids.
func TestParseTurnRef(t *testing.T) {
	for _, c := range []struct {
		ref      string
		n        uint64
		byNumber bool
		invalid  bool
	}{
		{"7", 7, true, false},
		{"07", 7, true, false},
		{"0", 0, true, false},
		{"18446744073709551615", 1<<64 - 1, true, false},
		{"18446744073709551616", 0, true, true},
		{"99999999999999999999", 0, true, true},
		{"-1", 0, true, true},
		{"-0", 0, true, true},
		{"+5", 0, true, true},
		{" 7", 0, true, true},
		{"7 ", 0, true, true},
		{"\t7\n", 0, true, true},
		{"0x10", 0, true, true},
		{"0X1f", 0, true, true},
		{"0o7", 0, true, true},
		{"0b101", 0, true, true},
		{"1_000", 0, true, true},
		{"1e3", 0, true, true},
		{"1E3", 0, true, true},
		{"1.5", 0, true, true},
		{"7.", 0, true, true},
		{".5", 0, true, true},
		{"-99999999999999999999", 0, true, true},
		{"0xffffffffffffffffffff", 0, true, true},
		{"1e999", 0, true, true},
		{"0x1p4", 0, true, true},

		{"", 0, false, false},
		{"call-7", 0, false, false},
		{"turn 7", 0, false, false},
		{"v1.2.3", 0, false, false},
		{"1.2.3", 0, false, false},
		{"2024-01-01", 0, false, false},
		{"7a", 0, false, false},
		{"1e", 0, false, false},
		{"0x", 0, false, false},
		{"nan", 0, false, false},
		{"Inf", 0, false, false},
		{"-", 0, false, false},
		{"٧", 0, false, false}, // not an ASCII digit: no syntax here reads it
	} {
		n, byNumber, err := ParseTurnRef(c.ref)
		if n != c.n || byNumber != c.byNumber || (err != nil) != c.invalid || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("ParseTurnRef(%q) = %d, %v, %v; want %d, %v, invalid %v", c.ref, n, byNumber, err, c.n, c.byNumber, c.invalid)
		}
		if idErr := CheckTurnID(c.ref); (idErr != nil) != c.byNumber {
			t.Errorf("CheckTurnID(%q) = %v; a reading as a number: %v", c.ref, idErr, c.byNumber)
		}
	}
}

// TestNumberLikeTurnIDs: a turn cannot begin with an id that reads as
// a number, and a number-like reference is refused (ErrInvalid), not
// looked up as an id nor reported as a turn that does not exist.
func TestNumberLikeTurnIDs(t *testing.T) {
	j, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	now := time.Now()
	for _, id := range []string{"42", "07", "99999999999999999999", "-1", "+5", "0x10", "1e3", "1.5", " 7"} {
		if _, err := j.BeginTurn(id, "", now); !errors.Is(err, ErrInvalid) {
			t.Errorf("BeginTurn(%q): %v, want ErrInvalid", id, err)
		}
	}
	if _, open := j.OpenTurn(); open {
		t.Fatalf("a refused id opened a turn")
	}
	if _, err := j.BeginTurn("call-1", "", now); err != nil {
		t.Fatal(err)
	}
	if _, err := j.EndTurn(now); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"1", "01", "call-1"} {
		if got, err := j.FindTurn(ref); err != nil || got.Num != 1 {
			t.Errorf("FindTurn(%q) = %d, %v; want turn 1", ref, got.Num, err)
		}
	}
	for _, ref := range []string{"99999999999999999999", "-1", "0x1", "1e0", "1.0", "+1"} {
		if _, err := j.FindTurn(ref); !errors.Is(err, ErrInvalid) {
			t.Errorf("FindTurn(%q): %v, want ErrInvalid", ref, err)
		}
	}
	for _, ref := range []string{"2", "call-2", ""} {
		if _, err := j.FindTurn(ref); !errors.Is(err, ErrTurnNotFound) {
			t.Errorf("FindTurn(%q): %v, want ErrTurnNotFound", ref, err)
		}
	}
}
