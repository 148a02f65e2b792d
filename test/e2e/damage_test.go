package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pack file lost from the journal is damage, and is reported as such,
// with a daemon and without: reading a pre-image from it (cat --at,
// diff) fails with the exit code of an error (1, as cowfs fsck's for
// what it cannot read) and says the journal is damaged and what to run;
// a rollback stops partial (exit 9) with the same reason, and the same
// rollback again (here without a daemon) skips the path and reports why,
// leaving it as the turn left it. Never "not found" (exit 5), which says
// a path or turn does not exist.
func TestMissingPackIsDamage(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"a.txt": strings.Repeat("before\n", 100)})
	w.mount()
	w.cowfs("turn", "begin")
	w.sh("echo after > a.txt")
	w.cowfs("turn", "end")
	journal := w.status().Journal
	packs, _ := filepath.Glob(filepath.Join(journal, "packs", "*.pack"))
	if len(packs) == 0 {
		t.Fatalf("no pack in %s", journal)
	}
	for _, p := range packs {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how string, rollbackCode int) {
		t.Helper()
		for _, c := range []struct {
			args []string
			code int
			hint string
		}{
			{[]string{"cat", "--at", "1", "a.txt"}, 1, "cowfs fsck"},
			{[]string{"diff", "1"}, 1, "cowfs fsck"},
			{[]string{"rollback", "1"}, rollbackCode, ""},
		} {
			out, errOut, code := w.run(c.args...)
			if code != c.code || !strings.Contains(out+errOut, "journal is damaged: pack") || !strings.Contains(errOut, c.hint) {
				t.Errorf("%s: cowfs %s with the pre-image's pack gone: exit %d, want %d and a message that says the journal is damaged: %s%s",
					how, strings.Join(c.args, " "), code, c.code, out, errOut)
			}
		}
		if got, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(got) != "after\n" {
			t.Errorf("%s: a.txt is %q after the failed rollback", how, got)
		}
	}
	check("with a daemon", 9)
	w.umount()
	check("without a daemon", 0) // the rollback's retry
}
