package ctl

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// TestWriteJSON: a diff written a file at a time, and a rollback's
// result a path at a time, are the same bytes as the reply encoder makes
// of them.
func TestWriteJSON(t *testing.T) {
	marker := &Marker{Turn: 2, Anchor: "msg-7", CreatedAt: time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC), Note: "later messages removed",
		Replaces: []Marker{{Turn: 3, Note: "x"}}}
	for _, v := range []interface{ WriteJSON(io.Writer) error }{
		Diff{From: "turn 1", To: "now"},
		Diff{From: "turn 1", To: "end of turn 1", Files: []DiffFile{}},
		Diff{From: "turn <2>", To: "turn 3 & \"4\"", Files: []DiffFile{
			{Path: "a.txt", Status: "modified", Added: 1, Removed: 1, Diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-<old>\n+new\u2028\n"},
			{Path: "b/c", From: "c", Status: "renamed", Agent: NotAgent()},
			{Path: "big", Status: "modified", TooLarge: true},
		}},
		RollbackResult{Target: 1, DryRun: true},
		RollbackResult{Target: 1, Paths: []PathAction{}, Complete: true},
		RollbackResult{Target: 4, Rollback: 9, Marker: marker, Complete: false, Failure: "no space\n\"paths\": null",
			Counts: RollbackCounts{Restored: 1, Skipped: 1},
			Paths: []PathAction{
				{Path: "a/<b>", Action: ActionRestore, Type: "file"},
				{Path: "c", Action: ActionSkip, Type: "dir", Reason: "changed behind the mount: \"paths\": null", Retried: true},
				{Path: "d", Action: ActionRecover, Type: "file", From: "e"},
			}},
	} {
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if err := v.WriteJSON(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("written:\n%s\nwant:\n%s", got.String(), want.String())
		}
	}
}
