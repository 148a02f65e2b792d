package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// # Rollbacks against a racer
//
// A rollback runs as root over a directory other users can write. Each
// step must act on the inode it checked: a racer (uid 65534) who
// exchanges two names in the backing directory between the check and
// the act must not get root to write, chown, chmod, truncate, set an
// xattr on, move or delete anything else — least of all a root-owned
// file, or a file outside the workspace hard-linked in — nor to copy a
// secret into a file the racer may read; and the report must say what
// was done (racecheck_test.go has the rules).
//
// Each kind of step has a group (racekinds_test.go): a directory the
// racer may write, holding the racer's files beside root's (mode 0600,
// secret content), a change in the turn that makes the rollback take
// that step, and the two names the racer exchanges to redirect it. The
// deterministic tests stop cowfs at the k-th system call naming the
// step's file (syscalltrap_test.go) and have the racer exchange there,
// one group for each k: every point between check and act is tried,
// in one run, whatever the executor looks like. They run rollbacks
// and unreverts online (daemon, view at --mountpoint) and offline (no
// daemon: the CLI acts on the backing directory). The loop test races
// for real: the racer exchanges names as fast as it can from the
// moment the rollback begins (-long: many times over).

// raceModes are the ways a rollback runs.
var raceModes = []struct {
	name              string
	offline, unrevert bool
}{
	{"online rollback", false, false},
	{"online unrevert", false, true},
	{"offline rollback", true, false},
	{"offline unrevert", true, true},
}

// testRaceModes runs the deterministic test of kinds in every mode.
func testRaceModes(t *testing.T, kinds []raceKind) {
	for _, mode := range raceModes {
		t.Run(mode.name, func(t *testing.T) {
			rw := newRaceWorkspace(t)
			rw.addGroups(kinds, raceMaxK)
			rw.strikeRollback(mode.name, mode.offline, mode.unrevert)
		})
	}
}

// Each kind of step, redirected at each of its calls to root's file or
// to the racer's.
func TestRollbackRace(t *testing.T) { testRaceModes(t, raceKinds) }

// Each kind of step redirected to a file of root's outside the
// workspace that the racer hard-linked in (protected_hardlinks=0).
func TestRollbackRaceHardlinks(t *testing.T) { testRaceModes(t, raceLinkKinds) }

// The directory of a step exchanged for a symlink to a directory of
// root's outside the workspace: the step reaches nothing through it,
// and is skipped, not failed.
func TestRollbackRaceSymlinkedDir(t *testing.T) { testRaceModes(t, raceSymlinkKinds) }

// raceSignals is how many of the racer's files the turn chmods before
// and after the groups' changes: the rollback (or unrevert) chmods
// them back first, which tells the racer, through inotify, to start.
const raceSignals = 300

// The racer exchanging the names of every group as fast as it can,
// from the first chmod of the rollback (or unrevert) until it ends.
// Short, it is a smoke test of the real race; -long runs it many times
// over.
func TestRollbackRaceLoop(t *testing.T) {
	rounds := 1
	if *long {
		rounds = 500
	}
	kinds := append(append([]raceKind{}, raceKinds...), raceLinkKinds...)
	for _, mode := range raceModes {
		t.Run(mode.name, func(t *testing.T) {
			for i := 0; i < rounds && !t.Failed(); i++ {
				t.Run(fmt.Sprint(i), func(t *testing.T) { raceLoop(t, kinds, mode.offline, mode.unrevert) })
			}
		})
	}
}

func raceLoop(t *testing.T, kinds []raceKind, offline, unrevert bool) {
	rw := newRaceWorkspace(t)
	rw.untrapped = true
	rw.addGroups(kinds, 1)
	// The rollback undoes the turn newest first; an unrevert undoes the
	// rollback newest first, so it starts where the turn did.
	sigBefore, sigAfter := rw.signalDir("signal-before"), rw.signalDir("signal-after")
	pre := snapshotInodes(t, rw.dir)
	rw.mount()
	rw.cowfs("turn", "begin")
	rw.chmodAll(sigBefore)
	rw.doGroupChanges()
	rw.chmodAll(sigAfter)
	rw.cowfs("turn", "end")
	if offline {
		rw.umount()
	}
	post := snapshotInodes(t, rw.dir)
	what, args, goal, start := "rollback", []string{"rollback", "1"}, pre, sigAfter
	if unrevert {
		res, failed := rw.rollbackCmd(offline, "rollback", "1")
		if failed != "" {
			t.Fatal(failed)
		}
		if bad := raceCheck(post, pre, snapshotInodes(t, rw.dir), res, nil); len(bad) > 0 || !res.Complete {
			t.Fatalf("the rollback before the unrevert, with no racer:\n  %s\nreport: %s", strings.Join(bad, "\n  "), reportLines(res, nil))
		}
		what, args, goal, start = "unrevert", []string{"unrevert"}, post, sigBefore
	}
	loop := []string{filepath.Join(rw.dir, start)}
	x := rw.exchanged(unrevert)
	for _, pair := range x {
		loop = append(loop, filepath.Join(rw.dir, pair[0]), filepath.Join(rw.dir, pair[1]))
	}
	before := snapshotInodes(t, rw.dir)
	rw.racer.must("loop", loop...)
	res, failed := rw.rollbackCmd(offline, args...)
	n := rw.racer.must("stop").N
	if failed != "" {
		t.Errorf("the %s, with the racer exchanging names in a loop (%d exchanges), failed: %s", what, n, failed)
		return
	}
	bad := raceCheck(before, goal, snapshotInodes(t, rw.dir), res, x)
	if !res.Complete {
		bad = append(bad, fmt.Sprintf("the %s stopped partial: %s", what, res.Failure))
	}
	if len(bad) > 0 {
		summary, named := groupsIn(bad, rw.groups)
		t.Errorf("the %s, with the racer exchanging names in a loop (%d exchanges): %s\n  %s\nreport (of those groups): %s",
			what, n, summary, strings.Join(bad, "\n  "), reportLines(res, named))
	}
}

// signalDir makes a directory of the racer's with raceSignals files of
// its own, and returns its workspace path.
func (rw *raceWorkspace) signalDir(name string) string {
	dir := filepath.Join(rw.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		rw.t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		rw.t.Fatal(err)
	}
	for i := 0; i < raceSignals; i++ {
		writeOwned(rw.t, filepath.Join(dir, fmt.Sprint(i)), "", 0o644, nobody, "")
	}
	return name
}

// chmodAll chmods the files of the workspace directory dir through the
// mount.
func (rw *raceWorkspace) chmodAll(dir string) {
	for i := 0; i < raceSignals; i++ {
		if err := os.Chmod(rw.path(filepath.Join(dir, fmt.Sprint(i))), 0o600); err != nil {
			rw.t.Fatal(err)
		}
	}
}
