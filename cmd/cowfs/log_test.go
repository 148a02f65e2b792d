package main

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cowfs/cowfs/journal"
)

// cowfs log fits 100 columns with the ids a CLI agent gives (UUID turn
// ids, long anchors), a reverted turn and changes by others; --wide
// prints the ids whole.
func TestLogFitsHundredColumns(t *testing.T) {
	h := newHistory(t)
	var ids, anchors []string
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("0f8fad5b-d9cb-469f-a165-70867728950%d", i)
		anchor := fmt.Sprintf("b%d3e2a4c-7f1d-4e8a-9c2b-5d6e7f8a9b0c/msg_01XFDUDYJgAACzvnptvVoYEL", i)
		ids, anchors = append(ids, id), append(anchors, anchor)
		h.begin(id, anchor)
		for k := 0; k < 3; k++ {
			h.create(fmt.Sprintf("f%d-%d.txt", i, k), journal.Caller{Pid: 100, Comm: "sh"})
		}
		h.createBy(fmt.Sprintf("editor%d.txt", i), journal.Caller{Pid: 200, Comm: "vim"}, true)
		h.end()
	}
	h.close()
	if _, _, code := h.cowfs("rollback", "3", "--force"); code != 0 {
		t.Fatalf("rollback 3: exit %d", code)
	}

	out, _, code := h.cowfs("log")
	if code != 0 {
		t.Fatalf("log: exit %d", code)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("a line of %d columns:\n%s", n, line)
		}
	}
	if !strings.Contains(out, "0f8fad5b…89501") || !strings.Contains(out, "reverted") || !strings.Contains(out, "(+1)") {
		t.Errorf("log:\n%s", out)
	}
	t.Logf("log:\n%s", out)

	wide, _, code := h.cowfs("log", "--wide")
	if code != 0 {
		t.Fatalf("log --wide: exit %d", code)
	}
	for _, s := range append(ids, anchors...) {
		if !strings.Contains(wide, s) {
			t.Errorf("log --wide lacks %s:\n%s", s, wide)
		}
	}
}
