package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/test/testenv"
)

// raceGroup is one kind in one directory of the workspace, struck at
// the k-th call naming its watched file.
type raceGroup struct {
	kind raceKind
	name string // its directory, also the prefix of its names
	k    int
}

func (g raceGroup) path(name string) string { return groupPath(g.name, name) }

// strike returns the name the racer watches in g and the two paths it
// exchanges, for a rollback or an unrevert.
func (g raceGroup) strike(unrevert bool) (watch string, swap [2]string) {
	watch, swap = g.kind.watch, g.kind.swap
	if unrevert && g.kind.unSwap[0]+g.kind.unSwap[1] != "" {
		watch, swap = g.kind.unWatch, g.kind.unSwap
	}
	return filepath.Base(g.path(watch)), [2]string{g.path(swap[0]), g.path(swap[1])}
}

// raceWorkspace is a workspace whose top directory and group
// directories the racer may write, with the view at --mountpoint so
// that the backing directory stays reachable, a canary beside it, and
// a directory of root's files outside it (outside).
type raceWorkspace struct {
	*workspace
	t       *testing.T
	racer   *racer
	trap    *syscallTrap
	outside string
	groups  []raceGroup
	// untrapped: offline rollbacks run without the trap (the daemon
	// runs without it unless mountTrapped mounts it).
	untrapped bool
}

func newRaceWorkspace(t *testing.T) *raceWorkspace {
	bin := roleBinary(t)
	tr := newSyscallTrap(t, bin) // first: it outlives the daemons
	w := newWorkspace(t)
	withMountpoint(w)
	newCanary(t, w)
	top := filepath.Dir(w.dir)
	for _, d := range []string{top, filepath.Dir(top)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(w.dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(top, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	return &raceWorkspace{workspace: w, t: t, racer: startRacer(t, bin), trap: tr, outside: outside}
}

// addGroups seeds, in the backing directory, a group of each kind for
// each k in 1..maxK, has the racer plant its links, and registers a
// check that what is outside the workspace stays as it was.
func (rw *raceWorkspace) addGroups(kinds []raceKind, maxK int) {
	var links, symlinks [][2]string
	for _, kind := range kinds {
		for k := 1; k <= maxK; k++ {
			g := raceGroup{kind: kind, name: fmt.Sprintf("%s-%d", kind.name, k), k: k}
			l, s := rw.seedGroup(g)
			links, symlinks = append(links, l...), append(symlinks, s...)
			rw.groups = append(rw.groups, g)
		}
	}
	if len(links) > 0 {
		withoutProtectedHardlinks(rw.t, func() {
			for _, l := range links {
				rw.racer.must("link", l[0], l[1])
			}
		})
	}
	for _, s := range symlinks {
		rw.racer.must("symlink", s[0], s[1])
	}
	before := snapshot(rw.t, rw.outside)
	rw.t.Cleanup(func() { sameTree(rw.t, rw.outside, before, "root's files outside the workspace") })
}

// seedGroup makes g's directories and files, and returns the hard links
// and symlinks (target, path) the racer is to make.
func (rw *raceWorkspace) seedGroup(g raceGroup) (links, symlinks [][2]string) {
	t := rw.t
	dirs := []string{g.path("")}
	for _, name := range []string{g.kind.swap[1], g.kind.unSwap[1]} {
		if name == racerDir {
			dirs = append(dirs, g.path(racerDir))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(rw.dir, d)
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range g.kind.files {
		p := filepath.Join(rw.dir, g.path(f.name))
		if f.outside {
			out := filepath.Join(rw.outside, filepath.Base(p))
			writeOwned(t, out, "root's own file, outside the workspace\n", 0o644, 0, "")
			links = append(links, [2]string{out, p})
			continue
		}
		if f.root {
			writeOwned(t, p, fmt.Sprintf("%s of root's, %s: keep it\n", secretMark, g.path(f.name)), 0o600, 0, f.xattr)
		} else {
			writeOwned(t, p, fmt.Sprintf("the racer's file %s, in its own words\n", g.path(f.name)), 0o644, nobody, f.xattr)
		}
	}
	if g.kind.swap[1] == symlinkOut {
		// What the step would reach through the symlink: root's files
		// of the same names.
		dir := filepath.Join(rw.outside, g.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"v", "s", "new"} {
			writeOwned(t, filepath.Join(dir, filepath.Base(g.path(name))), "root's own file, outside the workspace\n", 0o644, 0, "old")
		}
		symlinks = append(symlinks, [2]string{dir, filepath.Join(rw.dir, g.path(symlinkOut))})
	}
	return links, symlinks
}

// writeOwned writes a file with mode, owner and group uid, and xattr
// user.k if it is set.
func writeOwned(t testing.TB, p, content string, mode os.FileMode, uid int, xattr string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
	if xattr != "" {
		if err := unix.Setxattr(p, "user.k", []byte(xattr), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// withoutProtectedHardlinks runs fn with fs.protected_hardlinks 0, as
// on systems that do not protect hard links: anyone may then link a
// file they do not own. It is set back at once.
func withoutProtectedHardlinks(t testing.TB, fn func()) {
	t.Helper()
	const knob = "/proc/sys/fs/protected_hardlinks"
	old, err := os.ReadFile(knob)
	if err != nil {
		testenv.Skip(t, "no "+knob+": "+err.Error())
	}
	if err := os.WriteFile(knob, []byte("0\n"), 0); err != nil {
		testenv.Skip(t, "cannot set "+knob+": "+err.Error())
	}
	defer func() {
		if err := os.WriteFile(knob, old, 0); err != nil {
			t.Errorf("setting %s back to %s: %v", knob, bytes.TrimSpace(old), err)
		}
	}()
	fn()
}

// mountTrapped mounts the workspace with its daemon under the trap.
func (rw *raceWorkspace) mountTrapped() {
	t := rw.t
	cmd := rw.trap.command(cowfsBin, "mount", "--background", "--mountpoint", rw.mnt, rw.dir)
	cmd.Env = append(cmd.Env, "COWFS_STATE_DIR="+rw.state)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := rw.trap.start(cmd); err != nil {
		t.Fatalf("cowfs mount under the trap: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("cowfs mount under the trap: %v: %s", err, out.Bytes())
	}
	rw.pids = append(rw.pids, rw.status().Pid)
}

// doTurn makes every group's change in one turn.
func (rw *raceWorkspace) doTurn() {
	rw.cowfs("turn", "begin")
	rw.doGroupChanges()
	rw.cowfs("turn", "end")
}

// doGroupChanges makes every group's change, as root, through the
// mount.
func (rw *raceWorkspace) doGroupChanges() {
	for _, g := range rw.groups {
		if err := g.kind.turn(func(name string) string { return rw.path(g.path(name)) }); err != nil {
			rw.t.Fatalf("the turn in %s: %v", g.name, err)
		}
	}
}

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

// rollbackCmd runs `cowfs ARGS --json` (a rollback or an unrevert):
// online, or, offline, under the trap. It returns the report, of a
// partial rollback (exit 9) too; any other failure is returned as
// failed.
func (rw *raceWorkspace) rollbackCmd(offline bool, args ...string) (res ctl.RollbackResult, failed string) {
	ws := rw.mnt
	if offline {
		ws = rw.dir
	}
	argv := append([]string{"-w", ws}, append(args, "--json")...)
	trapped := offline && !rw.untrapped
	var cmd *exec.Cmd
	if trapped {
		cmd = rw.trap.command(append([]string{cowfsBin}, argv...)...)
		cmd.Env = append(cmd.Env, "COWFS_STATE_DIR="+rw.state)
	} else {
		cmd = exec.Command(cowfsBin, argv...)
		cmd.Env = rw.env()
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	var err error
	if trapped {
		if err = rw.trap.start(cmd); err == nil {
			err = cmd.Wait()
		}
	} else {
		err = cmd.Run()
	}
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 9) {
		return res, fmt.Sprintf("cowfs %s: %v: %s%s", strings.Join(args, " "), err, out.Bytes(), errOut.Bytes())
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fmt.Sprintf("cowfs %s: bad JSON %q: %v (%s)", strings.Join(args, " "), out.Bytes(), err, errOut.Bytes())
	}
	return res, ""
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
