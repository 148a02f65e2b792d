package e2e

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/testenv"
)

// journalFS mounts a tmpfs of size for w's journal and returns the
// journal directory in it. It is unmounted after w.
func journalFS(t *testing.T, w *workspace, size string) string {
	t.Helper()
	jfs := filepath.Join(t.TempDir(), "journalfs")
	os.Mkdir(jfs, 0o700)
	if err := syscall.Mount("tmpfs", jfs, "tmpfs", 0, "size="+size); err != nil {
		testenv.Skip(t, "cannot mount a tmpfs for the journal: "+err.Error())
	}
	// Registered after newWorkspace's cleanup, so it runs before it:
	// unmount the workspace first, then its journal's filesystem.
	t.Cleanup(func() {
		w.cleanup()
		w.pids = nil
		if err := syscall.Unmount(jfs, 0); err != nil {
			syscall.Unmount(jfs, syscall.MNT_DETACH)
		}
	})
	return filepath.Join(jfs, "journal")
}

func randomFile(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// churnTurns runs turns that each overwrite one of three 12 MiB files
// with new bytes, and returns what the files held when each turn began.
func churnTurns(t *testing.T, w *workspace, turns int) map[string]map[string][]byte {
	t.Helper()
	names := []string{"a.bin", "b.bin", "c.bin"}
	cur := map[string][]byte{}
	for _, n := range names {
		cur[n] = randomFile(12 << 20)
		if err := os.WriteFile(w.path(n), cur[n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]map[string][]byte{}
	for i := 1; i <= turns; i++ {
		st := w.status()
		w.cowfs("turn", "begin")
		num := fmt.Sprint(w.status().OpenTurn.Num)
		before[num] = map[string][]byte{}
		for k, v := range cur {
			before[num][k] = v
		}
		n := names[i%3]
		cur[n] = randomFile(12 << 20)
		if err := os.WriteFile(w.path(n), cur[n], 0o644); err != nil {
			t.Fatalf("turn %s: overwrite %s (journal %d bytes, %d free): %v", num, n, st.JournalBytes, st.FreeBytes, err)
		}
		w.cowfs("turn", "end")
	}
	return before
}

// pruned returns the turn_pruned events so far.
func pruned(t *testing.T, w *workspace) []ctl.Event {
	t.Helper()
	var out []ctl.Event
	f := follow(t, ctl.NewClient(w.status().Socket), 0)
	f.waitFor(t, "turn_end", func(e ctl.Event) bool { return e.Type == ctl.EventTurnEnd })
	f.stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.events {
		if e.Type == ctl.EventTurnPruned {
			out = append(out, e)
		}
	}
	return out
}

// checkPrunedEarly checks that the turns before the window's oldest left
// it early for reason, oldest first, and said so in events, status and
// log.
func checkPrunedEarly(t *testing.T, w *workspace, ev []ctl.Event, reason string) ctl.Status {
	t.Helper()
	st := w.status()
	if st.OldestTurn < 2 {
		t.Fatalf("no turn left the window early: turns %d to %d", st.OldestTurn, st.LatestTurn)
	}
	if len(ev) == 0 {
		t.Fatalf("no turn_pruned event")
	}
	for i, e := range ev {
		if e.Turn != uint64(i+1) || e.Reason != reason {
			t.Fatalf("turn_pruned event %d: %+v, want turn %d for %s", i, e, i+1, reason)
		}
	}
	if p := st.PrunedEarly; p == nil || p.Reason != reason || p.Through != st.OldestTurn-1 {
		t.Fatalf("status: pruned early %+v, oldest turn %d", p, st.OldestTurn)
	}
	if out := w.cowfs("log"); !strings.Contains(out, fmt.Sprintf("turns up to %d left the window early", st.OldestTurn-1)) {
		t.Fatalf("log does not say turns left early:\n%s", out)
	}
	return st
}

// rollbackExact rolls back to before turn n and compares the files
// with what they held when it began.
func rollbackExact(t *testing.T, w *workspace, n uint64, want map[string][]byte) {
	t.Helper()
	w.cowfs("rollback", fmt.Sprint(n))
	for name, b := range want {
		got, err := os.ReadFile(w.path(name))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s after rollback to before turn %d: %v, not what it held", name, n, err)
		}
	}
}

// A change whose pre-image could never fit fails with ENOSPC, changes
// nothing and drops no turn; small changes still work.
func refusedButSmallWork(t *testing.T, w *workspace) {
	t.Helper()
	st := w.status()
	big := randomFile(100 << 20)
	if err := os.WriteFile(w.path("big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	w.cowfs("turn", "begin")
	out, err := exec.Command("truncate", "-s", "0", w.path("big.bin")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left") {
		t.Fatalf("truncate of a file whose pre-image does not fit: %v %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "big.bin")); !bytes.Equal(b, big) {
		t.Fatalf("big.bin changed although its pre-image could not be journaled")
	}
	if now := w.status(); now.OldestTurn != st.OldestTurn {
		t.Fatalf("turns %d to %d in the window, was %d to %d", now.OldestTurn, now.LatestTurn, st.OldestTurn, st.LatestTurn)
	}
	w.sh("mkdir d && echo small > d/small.txt && rm big.bin")
	w.cowfs("turn", "end")
}

// The size bound: past --max-journal-size the oldest turns leave the
// window early, visibly; a change that does not fit even then fails with
// ENOSPC and changes nothing (#12.3).
func TestMaxJournalSize(t *testing.T) {
	w := newWorkspace(t)
	w.mount("--max-journal-size", "40MiB")
	before := churnTurns(t, w, 6)
	ev := pruned(t, w)
	st := checkPrunedEarly(t, w, ev, ctl.PrunedMaxSize)
	if st.MaxJournalBytes != 40<<20 || st.JournalBytes > st.MaxJournalBytes {
		t.Fatalf("status: journal %d bytes, bound %d", st.JournalBytes, st.MaxJournalBytes)
	}
	refusedButSmallWork(t, w)
	st = w.status()
	rollbackExact(t, w, st.OldestTurn, before[fmt.Sprint(st.OldestTurn)])
	if _, err := os.Stat(w.path("d")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("d after the rollback: %v", err)
	}
}

// A full journal filesystem behaves the same: turns leave the window
// early to make room; a change that still does not fit fails with
// ENOSPC, the daemon stays up, and once space is freed work goes on
// without a restart: changes, and a rollback that first stopped for
// want of room to journal its own changes (#12.4).
func TestJournalFilesystemFull(t *testing.T) {
	w := newWorkspace(t)
	jdir := journalFS(t, w, "64m")
	jfs := filepath.Dir(jdir)
	w.mount("--journal", jdir)
	before := churnTurns(t, w, 6)
	ev := pruned(t, w)
	checkPrunedEarly(t, w, ev, ctl.PrunedDiskFull)
	refusedButSmallWork(t, w)

	// Something else fills the filesystem: even a mkdir cannot be
	// recorded, so it fails, and no turn leaves the window (pruning
	// needs room to write too); freed, it works again.
	w.cowfs("turn", "begin")
	st := w.status()
	var fs syscall.Statfs_t
	syscall.Statfs(jfs, &fs)
	ballast := filepath.Join(jfs, "ballast")
	if err := os.WriteFile(ballast, make([]byte, int64(fs.Bavail)*fs.Bsize-(2<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(w.path("e"), 0o755); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("mkdir on a full journal filesystem: %v", err)
	}
	if now := w.status(); now.OldestTurn != st.OldestTurn {
		t.Fatalf("turns %d to %d in the window, was %d to %d", now.OldestTurn, now.LatestTurn, st.OldestTurn, st.LatestTurn)
	}
	os.Remove(ballast)
	if err := os.Mkdir(w.path("e"), 0o755); err != nil {
		t.Fatalf("mkdir once space was freed: %v", err)
	}
	w.cowfs("turn", "end")
	if d := w.turn(fmt.Sprint(st.OpenTurn.Num)); len(d.Changes) != 1 || d.Changes[0].Path != "e" {
		t.Fatalf("changes of the last turn: %+v", d.Changes)
	}

	// Rolling back to the oldest turn journals what it overwrites (so
	// it can be undone): 3 files of 12 MiB do not fit, and no turn
	// older than its target may leave. It stops, partial; with room,
	// the same rollback finishes, exact.
	n := fmt.Sprint(st.OldestTurn)
	if _, errOut, code := w.run("rollback", n); code != 9 {
		t.Fatalf("rollback on a full journal filesystem: exit %d: %s", code, errOut)
	}
	if err := syscall.Mount("tmpfs", jfs, "", syscall.MS_REMOUNT, "size=256m"); err != nil {
		t.Fatal(err)
	}
	rollbackExact(t, w, st.OldestTurn, before[n])
	for _, p := range []string{"d", "e"} {
		if _, err := os.Stat(w.path(p)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after the rollback: %v", p, err)
		}
	}
}
