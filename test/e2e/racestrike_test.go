package e2e

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cowfs/cowfs/ctl"
)

// The deterministic race tests: each group struck at its own call (see
// race_test.go), the result judged by raceCheck.

// strikes returns the trap's actions: for each group, the racer
// exchanges its two names at the k-th call naming its watched file.
// (One of them may not exist yet, or any more: the racer then tried.)
func (rw *raceWorkspace) strikes(unrevert bool) map[trapKey]func() {
	acts := map[trapKey]func(){}
	for _, g := range rw.groups {
		watch, swap := g.strike(unrevert)
		a, b := filepath.Join(rw.dir, swap[0]), filepath.Join(rw.dir, swap[1])
		acts[trapKey{watch, g.k}] = func() {
			if rep := rw.racer.do("exchange", a, b); rep.Err != "" && !strings.Contains(rep.Err, "no such file") {
				rw.t.Errorf("%s: the racer could not exchange: %s", g.name, rep.Err)
			}
		}
	}
	return acts
}

// exchanged lists the pairs of paths the racer exchanges.
func (rw *raceWorkspace) exchanged(unrevert bool) exchanges {
	var x exchanges
	for _, g := range rw.groups {
		_, swap := g.strike(unrevert)
		x = append(x, swap)
	}
	return x
}

// raceMaxK is how many calls naming a step's file the deterministic
// tests strike at, one group each: more than any step makes.
const raceMaxK = 12

// strikeRollback makes the turn, then rolls it back with the racer
// striking (unrevert false), or rolls it back unraced and unreverts
// with the racer striking.
func (rw *raceWorkspace) strikeRollback(what string, offline, unrevert bool) {
	t := rw.t
	pre := snapshotInodes(t, rw.dir)
	rw.mountTrapped()
	rw.doTurn()
	if offline {
		rw.umount()
	}
	post := snapshotInodes(t, rw.dir)
	if !unrevert {
		rw.struck(what, offline, false, pre, "rollback", "1")
		return
	}
	// Unraced, the rollback passes the same checks: they hold for a
	// rollback that is right.
	res, failed := rw.rollbackCmd(offline, "rollback", "1")
	if failed != "" {
		t.Fatal(failed)
	}
	if bad := raceCheck(post, pre, snapshotInodes(t, rw.dir), res, nil); len(bad) > 0 || !res.Complete {
		t.Fatalf("the rollback before the unrevert, with no racer:\n  %s\nreport: %s", strings.Join(bad, "\n  "), reportLines(res, nil))
	}
	rw.struck(what, offline, true, post, "unrevert")
}

// struck runs a rollback or an unrevert (args) with the racer striking
// each group at its k, and checks the result against goal, the state
// it restores.
func (rw *raceWorkspace) struck(what string, offline, unrevert bool, goal inodes, args ...string) {
	t := rw.t
	before := snapshotInodes(t, rw.dir)
	rw.trap.arm(rw.strikes(unrevert))
	res, failed := rw.rollbackCmd(offline, args...)
	counts, fired := rw.trap.disarm()
	if failed != "" {
		// A step that finds something else is skipped, and says so.
		t.Errorf("the %s, with the racer exchanging names at each call that names a step's file, failed: %s", what, failed)
		return
	}
	bad := raceCheck(before, goal, snapshotInodes(t, rw.dir), res, rw.exchanged(unrevert))
	var calls []string
	for _, g := range rw.groups {
		watch, _ := g.strike(unrevert)
		switch {
		case g.k == 1 && !fired[trapKey{watch, 1}]:
			bad = append(bad, fmt.Sprintf("%s: the %s never named %s: the racer never struck", g.name, what, watch))
		case g.k == raceMaxK && fired[trapKey{watch, raceMaxK}]:
			bad = append(bad, fmt.Sprintf("%s: the %s named %s %d times or more: raise raceMaxK, so that every call is struck at", g.name, what, watch, raceMaxK))
		case g.k == raceMaxK:
			calls = append(calls, fmt.Sprintf("%s %d", g.kind.name, counts[watch]))
		}
	}
	if !res.Complete {
		// The steps after the one that failed never ran: their groups
		// were not tried.
		bad = append(bad, fmt.Sprintf("the %s stopped partial: %s", what, res.Failure))
	}
	if len(bad) > 0 {
		summary, named := groupsIn(bad, rw.groups)
		t.Errorf("the %s, with the racer exchanging names at each call that names a step's file: %s\n  %s\nreport (of those groups): %s\ncalls naming the file of each kind, unraced: %s",
			what, summary, strings.Join(bad, "\n  "), reportLines(res, named), strings.Join(calls, ", "))
	}
}

// groupsIn sums up which groups the lines of bad name, by kind, and
// returns the names of those groups.
func groupsIn(bad []string, groups []raceGroup) (summary string, named map[string]bool) {
	named = map[string]bool{}
	byKind := map[string][]string{}
	var kinds []string
	for _, g := range groups {
		for _, l := range bad {
			if strings.Contains(l, g.name+"/") || strings.Contains(l, g.name+":") {
				if byKind[g.kind.name] == nil {
					kinds = append(kinds, g.kind.name)
				}
				byKind[g.kind.name] = append(byKind[g.kind.name], fmt.Sprint(g.k))
				named[g.name] = true
				break
			}
		}
	}
	struck := len(groups) > 0 && groups[len(groups)-1].k > 1 // each group at its own call
	var out []string
	for _, k := range kinds {
		if struck {
			k += " at call " + strings.Join(byKind[k], ",")
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return "(no group named)", named
	}
	return "wrong in " + strings.Join(out, "; "), named
}

// reportLines shows a report's paths one per line: those in the
// groups named, or all if named is nil.
func reportLines(res ctl.RollbackResult, named map[string]bool) string {
	var lines []string
	for _, p := range res.Paths {
		if g, _, _ := strings.Cut(string(p.Path), "/"); named != nil && !named[g] {
			continue
		}
		l := fmt.Sprintf("%s %s", p.Action, p.Path)
		if p.Reason != "" {
			l += " (" + p.Reason + ")"
		}
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return fmt.Sprintf("complete=%v %+v\n    %s", res.Complete, res.Counts, strings.Join(lines, "\n    "))
}
