package ctl

import (
	"encoding/json"
	"testing"
)

// Names that are not UTF-8 survive a round trip; valid ones encode as
// encoding/json does.
func TestPathJSON(t *testing.T) {
	for _, s := range []string{
		"plain.txt", "dir/ü名.go", "tab\there", "quote\"back\\slash", "emoji 😀",
		"latin1-\xe9t\xe9", "\xff\xfe", "bad-\xed\xa0\x80-surrogate", "ctl-\x1b[31m", "mixed-ü-\x80",
		"html<a>&b", "del\x7f", "", "src/.git/objects/b1/17438f02fe376f27e339b42ad2f4625e76abc7",
	} {
		b, err := json.Marshal(Path(s))
		if err != nil {
			t.Fatal(err)
		}
		var back Path
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %s: %v", s, b, err)
		}
		if string(back) != s {
			t.Errorf("%q: encoded %s, decoded %q", s, b, back)
		}
		if std, _ := json.Marshal(s); isValid(s) && string(std) != string(b) {
			t.Errorf("%q: %s, encoding/json gives %s", s, b, std)
		}
	}
	// Inside a struct, as clients see it.
	var pa PathAction
	if err := json.Unmarshal([]byte(`{"path":"a\udce9b","action":"skip"}`), &pa); err != nil || pa.Path != "a\xe9b" {
		t.Errorf("decoded %q %v", pa.Path, err)
	}
}

func isValid(s string) bool {
	var back string
	b, _ := json.Marshal(s)
	json.Unmarshal(b, &back)
	return back == s
}

// FuzzPathJSON: every name comes back exactly, and valid UTF-8 encodes
// as encoding/json encodes it.
func FuzzPathJSON(f *testing.F) {
	for _, s := range []string{"plain", "a<b", "\xff", "q\"", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(Path(s))
		if err != nil {
			t.Fatal(err)
		}
		var back Path
		if err := json.Unmarshal(b, &back); err != nil || string(back) != s {
			t.Fatalf("%q: encoded %s, decoded %q, %v", s, b, back, err)
		}
		if std, _ := json.Marshal(s); isValid(s) && string(std) != string(b) {
			t.Errorf("%q: %s, encoding/json gives %s", s, b, std)
		}
	})
}
