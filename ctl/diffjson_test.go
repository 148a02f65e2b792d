package ctl

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestDiffWriteJSON: a diff written a file at a time is the same bytes
// as the reply encoder makes of it.
func TestDiffWriteJSON(t *testing.T) {
	for _, d := range []Diff{
		{From: "turn 1", To: "now"},
		{From: "turn 1", To: "end of turn 1", Files: []DiffFile{}},
		{From: "turn <2>", To: "turn 3 & \"4\"", Files: []DiffFile{
			{Path: "a.txt", Status: "modified", Added: 1, Removed: 1, Diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-<old>\n+new\u2028\n"},
			{Path: "b/c", From: "c", Status: "renamed", Agent: NotAgent()},
			{Path: "big", Status: "modified", TooLarge: true},
		}},
	} {
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteJSON(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("written:\n%s\nwant:\n%s", got.String(), want.String())
		}
	}
}
