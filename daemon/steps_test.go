package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A turn's steps come in the order they began, each with what it
// changed itself: a path two steps wrote is under both, a step begun
// again adds to its first entry, and an open turn's steps are listed as
// far as they go.
func TestSteps(t *testing.T) {
	td := newTestDaemon(t)
	td.begin()
	td.create("a.txt", "a\n")
	td.step("s1")
	td.write("a.txt", "a1\n")
	td.create("b.txt", "b\n")
	td.step("s2")
	td.write("a.txt", "a2\n")
	td.step("s1")
	td.create("c.txt", "c\n")
	td.step("s3") // changes nothing

	list := func() string {
		t.Helper()
		l, err := td.svc().Steps(context.Background(), "1")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range l.Steps {
			var paths []string
			for _, c := range st.Changes {
				paths = append(paths, fmt.Sprintf("%s %s", c.Kind, c.Path))
			}
			out = append(out, fmt.Sprintf("%q: %s", st.ID, strings.Join(paths, ", ")))
		}
		return strings.Join(out, "; ")
	}
	const want = `"": created a.txt; "s1": modified a.txt, created b.txt, created c.txt; "s2": modified a.txt; "s3": `
	if got := list(); got != want {
		t.Errorf("open turn's steps:\n got %s\nwant %s", got, want)
	}
	td.end()
	if got := list(); got != want {
		t.Errorf("ended turn's steps:\n got %s\nwant %s", got, want)
	}
}
