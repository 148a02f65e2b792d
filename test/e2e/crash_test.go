package e2e

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// kill -9 of the daemon mid-turn loses nothing: after a restart every
// record made before the kill is there, the turn is still open, and the
// old bytes come back.
func TestKillDuringTurn(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "before\n", "gone.txt": "deleted later\n", "big.bin": strings.Repeat("0123456789", 100000)})
	w.mount()
	w.cowfs("turn", "begin", "--anchor", "m1")
	w.sh(`echo after > keep.txt; rm gone.txt; printf X | dd of=big.bin bs=1 seek=500000 conv=notrunc 2>/dev/null; mkdir newdir`)

	w.killDaemon(w.status().Pid)
	// The dead daemon leaves the mount answering ENOTCONN (or, while
	// the kernel is still tearing the connection down, ECONNABORTED).
	if _, err := os.Stat(w.path("keep.txt")); !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
		t.Fatalf("stat after kill: %v, want ENOTCONN", err)
	}

	// Mount again: the stale mount is cleared, and said so.
	out, errOut, code := w.run("mount", "--background", w.dir)
	if code != 0 {
		t.Fatalf("remount: exit %d: %s%s", code, out, errOut)
	}
	w.pids = append(w.pids, w.status().Pid)
	if !strings.Contains(errOut, "cleared a stale mount") {
		t.Errorf("remount does not say it cleared the stale mount: %q", errOut)
	}

	st := w.status()
	if st.OpenTurn == nil || st.OpenTurn.Num != 1 {
		t.Fatalf("after restart the open turn is %+v, want turn 1", st.OpenTurn)
	}
	kinds := map[string]string{}
	for _, c := range w.turn("1").Changes {
		kinds[string(c.Path)] = c.Kind
	}
	for p, k := range map[string]string{"keep.txt": "modified", "gone.txt": "deleted", "big.bin": "modified", "newdir": "created"} {
		if kinds[p] != k {
			t.Errorf("%s: %q after restart, want %q (all: %v)", p, kinds[p], k, kinds)
		}
	}
	if got := w.cowfs("cat", "--at", "1", "keep.txt"); got != "before\n" {
		t.Errorf("keep.txt at 1: %q", got)
	}
	if got := w.cowfs("cat", "--at", "1", "gone.txt"); got != "deleted later\n" {
		t.Errorf("gone.txt at 1: %q", got)
	}
	if got := w.cowfs("cat", "--at", "1", "big.bin"); got != strings.Repeat("0123456789", 100000) {
		t.Errorf("big.bin at 1 differs (%d bytes)", len(got))
	}
	// The turn goes on, and ends.
	w.sh(`echo again >> keep.txt`)
	w.cowfs("turn", "end")
	if got := w.cowfs("cat", "--at", "1", "keep.txt"); got != "before\n" {
		t.Errorf("keep.txt at 1 after more changes: %q", got)
	}
}
