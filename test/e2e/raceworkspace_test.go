package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
