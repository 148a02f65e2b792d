package e2e

import "testing"

// #32, skipped records are retried: a rollback skips f.txt for the
// person's edit made outside any turn; the person puts it back; a turn
// begins; the next rollback that covers the skipped change restores
// f.txt without --force and says it retried it. While the person's edit
// stands, it stays skipped.
func TestSkippedRetried(t *testing.T) {
	for _, undone := range []bool{true, false} {
		name := map[bool]string{true: "edit put back", false: "edit stands"}[undone]
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t)
			w.seed(map[string]string{"a.txt": "a\n", "f.txt": "original\n"})
			w.mount()
			turn := func(id, script string) {
				w.cowfs("turn", "begin", "--id", id)
				w.sh(script)
				w.cowfs("turn", "end")
			}
			turn("t0", "echo A > a.txt")
			turn("t1", "echo AGENT > f.txt")
			w.sh("echo the person > f.txt") // no turn open
			res := w.rollback("t1")
			if a := byPath(res)["f.txt"]; a.Action != "skip" {
				t.Fatalf("rollback t1: f.txt %+v, want skipped for the person's edit", a)
			}
			if undone {
				w.sh("echo AGENT > f.txt") // the person's editor, undoing
			}
			turn("t2", "echo B > a.txt")

			res = w.rollback("t0")
			f := byPath(res)["f.txt"]
			if undone {
				if f.Action != "restore" || !f.Retried {
					t.Errorf("rollback t0: f.txt %+v, want restored and retried", f)
				}
				w.wantFile("after rollback t0", "f.txt", "original\n")
			} else {
				if f.Action != "skip" || f.Retried {
					t.Errorf("rollback t0: f.txt %+v, want skipped again", f)
				}
				w.wantFile("after rollback t0", "f.txt", "the person\n")
			}
			w.wantFile("after rollback t0", "a.txt", "a\n")
		})
	}
}
