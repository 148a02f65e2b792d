package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

var (
	long      = flag.Bool("long", false, "run the randomized model test with many thousands of operations")
	modelSeed = flag.Uint64("seed", 0, "seed of the randomized model test (0: the fixed seeds, or the clock with -random)")
	random    = flag.Bool("random", false, "seed the randomized model test from the clock")
)

// modelSeeds are the seeds the model test runs with by default (and in
// CI): fixed, so a failure reproduces. -seed N runs one seed, -random
// one from the clock; -long with either makes a soak.
var modelSeeds = []uint64{1, 0xc0ffee}

// The randomized model test: random shell-level operations over many
// turns, a snapshot of the workspace when each turn begins, and
// rollbacks (and unreverts) to random turns, each compared with the
// snapshot: content, modes, owners, symlink targets, xattrs, mtimes,
// inode numbers and hard-link counts. Any difference fails and prints
// the seed and the operations that led there.
//
// Beside the agent (the test process, root: the turns' --agent-uid 0)
// works a person (a shell of uid nobody) in a directory of its own, p/:
// during turns, between them, and, after rollbacks, behind the mount
// (in p/behind, in the backing directory; the view is mounted
// elsewhere). Its files are checked after every operation: a rollback
// never takes back what the person did, unless it is forced — then they
// are as the target turn found them, but for what was written behind
// the mount, which no rollback undoes.
func TestModel(t *testing.T) {
	seeds := modelSeeds
	switch {
	case *modelSeed != 0:
		seeds = []uint64{*modelSeed}
	case *random:
		seeds = []uint64{uint64(time.Now().UnixNano())}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testModel(t, seed) })
	}
	// The same with FUSE passthrough for the files each epoch creates:
	// what the kernel writes without the daemon must roll back alike.
	t.Run(fmt.Sprint(seeds[0], "-passthrough"), func(t *testing.T) { testModel(t, seeds[0], "--passthrough") })
}

func testModel(t *testing.T, seed uint64, extraFlags ...string) {
	turns, perTurn := 24, 14
	if *long {
		turns, perTurn = 300, 25
	}
	m := &model{t: t, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
	defer func() {
		if t.Failed() {
			t.Logf("seed %d (rerun: go test ./test/e2e -run TestModel -seed %d); last operations:\n%s", seed, seed, m.tail())
			if dump := os.Getenv("COWFS_MODEL_DUMP"); dump != "" {
				m.dump(dump)
			}
		}
	}()
	w := newWorkspace(t)
	withMountpoint(w) // the backing directory stays reachable, for the person's writes behind the mount
	m.w = w
	m.seedTree()
	mountFlags := append([]string{"--window", "10", "--agent-uid", "0"}, extraFlags...) // the test process, and what it runs, is the agent
	w.mount(mountFlags...)
	m.startPerson()

	h := &historyModel{window: 10, snaps: map[uint64]tree{}, people: map[uint64]files{}, idleSince: map[uint64]bool{}, markers: map[uint64]bool{}}
	ops, personOps, rollbacks, unreverts, restarts := 0, 0, 0, 0, 0
	for i := 0; i < turns && !t.Failed(); i++ {
		if m.rng.IntN(8) == 0 {
			m.logf("-- outside a turn")
			for k := 1 + m.rng.IntN(3); k > 0; k-- {
				m.op()
				ops++
			}
			for _, n := range h.live {
				h.idleSince[n] = true
			}
		}
		if m.rng.IntN(4) == 0 {
			m.logf("-- the person, outside a turn")
			m.personOp()
			personOps++
		}
		m.dirty = nil // the turn's begin rescans: what was written behind the mount is seen
		snap := m.agentSnapshot()
		id := ""
		if m.rng.IntN(2) == 0 {
			id = fmt.Sprintf("call-%d", i)
		}
		var tr ctl.Turn
		w.cowfsJSON(&tr, "turn", "begin", "--id", id)
		m.logf("-- turn %d %s", tr.Num, id)
		h.begin(tr.Num, id, snap, m.person.clone())
		for k := 0; k < perTurn; k++ {
			if m.rng.IntN(6) == 0 {
				w.cowfs("turn", "step", fmt.Sprintf("s%d", k))
			}
			m.op()
			ops++
			if m.rng.IntN(5) == 0 {
				m.personOp()
				personOps++
			}
		}
		w.cowfs("turn", "end")
		m.check(h, "after turn end")

		// Some history operations: rollbacks (by number or id, to any
		// turn in the window, reverted or not), undo, redo, a restart.
		for k := m.rng.IntN(4); k > 0 && !t.Failed(); k-- {
			switch r := m.rng.IntN(10); {
			case r < 4: // rollback to a random turn
				target := pick(m.rng, h.live)
				ref := strconv.FormatUint(target, 10)
				if id := h.ids[target]; id != "" && m.rng.IntN(2) == 0 {
					ref = id
				}
				m.rollbackTo(h, target, ref)
				rollbacks++
			case r < 6: // undo: the latest turn not reverted
				target, ok := h.latestLive()
				if !ok {
					continue
				}
				m.logf("-- undo (to before %d)", target)
				args := []string{"undo"}
				force := h.mustForce(target)
				if force {
					args = append(args, "--force")
				}
				var res ctl.RollbackResult
				w.cowfsJSON(&res, args...)
				m.applied(h, target, res, force)
				rollbacks++
			case r < 9: // redo
				if len(h.stack) == 0 {
					if _, _, code := w.run("redo"); code != 7 {
						t.Errorf("redo with nothing to unrevert: exit %d, want 7", code)
					}
					continue
				}
				m.logf("-- redo")
				w.cowfs("redo")
				top := h.stack[len(h.stack)-1]
				h.stack = h.stack[:len(h.stack)-1]
				m.dirty = nil
				m.sameAgentTree(top.pre, "after redo of the rollback to before "+strconv.FormatUint(top.target, 10))
				if top.forced {
					m.person = m.person.but(top.person)
				}
				m.wantUnrevert++
				unreverts++
			default: // restart
				m.logf("-- restart")
				w.cowfs("umount")
				w.pids = nil
				w.mount(mountFlags...)
				restarts++
			}
			m.check(h, "after "+m.log[len(m.log)-1])
			// The person writes behind the mount after a rollback: never
			// after a forced one, whose undo (redo) would meet it.
			if r := m.log[len(m.log)-1]; strings.HasPrefix(r, "-- rollback") || strings.HasPrefix(r, "-- undo") {
				if !h.forced() && m.rng.IntN(2) == 0 {
					m.behind()
					personOps++
					m.checkPerson("after writing behind the mount")
				}
			}
		}
	}
	t.Logf("seed %d: %d operations and %d of the person's in %d turns, %d rollbacks, %d unreverts, %d restarts, all exact", seed, ops, personOps, turns, rollbacks, unreverts, restarts)
}

// historyModel is what the journal's history should be: the turns in
// the journal, the stack of rollbacks since the last turn began, the
// markers, and the workspace each turn began with.
type historyModel struct {
	window    int
	live      []uint64          // turn numbers in the journal, oldest first
	ids       map[uint64]string // harness ids
	snaps     map[uint64]tree   // the workspace (but p/) when each began
	people    map[uint64]files  // the person's files when each began
	idleSince map[uint64]bool   // changed outside a turn since it began
	stack     []stacked         // rollbacks since the last turn began
	markers   map[uint64]bool   // markers of rollbacks settled by a later turn
}

type stacked struct {
	target uint64
	pre    tree  // the workspace before it: what unrevert brings back
	person files // the person's files before it
	forced bool
}

// forced reports whether a rollback in the stack was forced: it put the
// person's files back, and their unrevert would meet later changes.
func (h *historyModel) forced() bool {
	for _, r := range h.stack {
		if r.forced {
			return true
		}
	}
	return false
}

// mustForce says whether a rollback to before target is forced: if the
// agent changed things outside turns since target began (they would be
// conflicts), and once one in the stack is (a later one, unforced,
// could undo some of its restores of the person's files and not others:
// a forced one is exact).
func (h *historyModel) mustForce(target uint64) bool {
	return h.idleSince[target] || h.forced()
}

// begin is a turn beginning: the stack settles (the turns from its
// top's target on are forgotten, markers standing stay, those the top
// superseded go), then the new turn joins and the oldest leave the
// window.
func (h *historyModel) begin(num uint64, id string, snap tree, person files) {
	if h.ids == nil {
		h.ids = map[uint64]string{}
	}
	if len(h.stack) > 0 {
		top := h.stack[len(h.stack)-1].target
		for n := range h.markers {
			if n >= top {
				delete(h.markers, n)
			}
		}
		h.markers[top] = true
		var keep []uint64
		for _, n := range h.live {
			if n < top {
				keep = append(keep, n)
			}
		}
		h.live = keep
		h.stack = nil
	}
	h.live = append(h.live, num)
	h.ids[num], h.snaps[num], h.people[num] = id, snap, person
	if len(h.live) > h.window {
		h.live = h.live[len(h.live)-h.window:]
	}
	for n := range h.markers {
		if n < h.live[0] {
			delete(h.markers, n)
		}
	}
}

// standing returns the turns whose markers stand: one per conversation
// point, so the stack's top and the settled markers before its target.
func (h *historyModel) standing() map[uint64]bool {
	out := map[uint64]bool{}
	top := uint64(1<<63 - 1)
	if len(h.stack) > 0 {
		top = h.stack[len(h.stack)-1].target
		out[top] = true
	}
	for n := range h.markers {
		if n < top {
			out[n] = true
		}
	}
	return out
}

func (h *historyModel) latestLive() (uint64, bool) {
	for i := len(h.live) - 1; i >= 0; i-- {
		if h.state(h.live[i]) != ctl.StateReverted {
			return h.live[i], true
		}
	}
	return 0, false
}

func (h *historyModel) state(n uint64) string {
	if len(h.stack) > 0 && n >= h.stack[len(h.stack)-1].target {
		return ctl.StateReverted
	}
	return ctl.StateClosed
}

// rollbackTo rolls back to before target, named by ref.
func (m *model) rollbackTo(h *historyModel, target uint64, ref string) {
	args := []string{"rollback", ref}
	force := h.mustForce(target)
	if force {
		args = append(args, "--force")
	}
	m.logf("-- rollback %v", args[1:])
	var res ctl.RollbackResult
	m.w.cowfsJSON(&res, args...)
	m.applied(h, target, res, force)
}

// applied checks a rollback's result and files, and pushes it. The only
// paths it may skip are the person's (never undone unless forced); the
// agent's part of the workspace is as target found it; the person's
// files are as they were, or, forced, as target found them but for what
// was written behind the mount.
func (m *model) applied(h *historyModel, target uint64, res ctl.RollbackResult, force bool) {
	t := m.t
	if res.Target != target || !res.Complete || res.Marker == nil || res.Marker.Turn != target {
		t.Fatalf("rollback to before %d: %+v", target, res)
	}
	for _, p := range res.Paths {
		if p.Action == ctl.ActionSkip && (force || !m.persons(string(p.Path))) {
			t.Fatalf("rollback to before %d skipped %+v: %+v", target, p, res.Paths)
		}
	}
	pre, prePerson := m.last, m.person.clone() // the workspace before the rollback
	m.wantRollbacks++
	m.dirty = nil // the rollback rescanned
	m.sameAgentTree(h.snaps[target], fmt.Sprintf("after rolling back to before turn %d", target))
	if force {
		m.person = m.person.but(h.people[target])
	}
	h.stack = append(h.stack, stacked{target: target, pre: pre, person: prePerson, forced: force})
}

// check compares turn states and markers with the model, and takes the
// snapshot the next rollback's unrevert must bring back.
func (m *model) check(h *historyModel, what string) {
	t := m.t
	var tl ctl.TurnList
	m.w.cowfsJSON(&tl, "log")
	got := map[uint64]string{}
	for _, tr := range tl.Turns {
		got[tr.Num] = tr.State
	}
	want := map[uint64]string{}
	for _, n := range h.live {
		want[n] = h.state(n)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: turns %v, want %v", what, got, want)
	}
	var ml ctl.MarkerList
	m.w.cowfsJSON(&ml, "markers")
	gotM := map[uint64]bool{}
	for _, mk := range ml.Markers {
		gotM[mk.Turn] = true
	}
	wantM := h.standing()
	if !reflect.DeepEqual(gotM, wantM) {
		t.Fatalf("%s: markers %v, want %v", what, gotM, wantM)
	}
	m.checkEvents(h, what)
	m.checkDiffs(h, what)
	m.checkPerson(what)
	m.last = m.agentSnapshot()
}

// checkEvents reads the events since the last check: in order, each
// change in a turn the model knows (or outside turns), one rollback or
// unrevert event for each done.
func (m *model) checkEvents(h *historyModel, what string) {
	t := m.t
	dec := json.NewDecoder(strings.NewReader(m.w.cowfs("events", "--json", "--since", strconv.FormatUint(m.lastEvent, 10))))
	for dec.More() {
		var e ctl.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("%s: events: %v", what, err)
		}
		if e.Seq <= m.lastEvent {
			t.Fatalf("%s: event %d after %d", what, e.Seq, m.lastEvent)
		}
		m.lastEvent = e.Seq
		switch e.Type {
		case ctl.EventRollback:
			m.wantRollbacks--
		case ctl.EventUnrevert:
			m.wantUnrevert--
		case ctl.EventChange:
			if e.Turn != 0 && h.snaps[e.Turn] == nil {
				t.Fatalf("%s: a change event in unknown turn %d: %+v", what, e.Turn, e)
			}
			// In a turn, the person's changes and only they are not
			// the agent's.
			notAgent := e.Agent != nil && !*e.Agent
			if e.Turn != 0 && e.Rollback == 0 && !e.Outside && notAgent != (m.persons(string(e.Path)) || m.persons(string(e.From))) {
				t.Fatalf("%s: change event %+v: not the agent's %v", what, e, notAgent)
			}
		}
	}
	if m.wantRollbacks != 0 || m.wantUnrevert != 0 {
		t.Fatalf("%s: %d rollback and %d unrevert events missing (negative: too many)", what, m.wantRollbacks, m.wantUnrevert)
	}
}

// checkDiffs diffs the newest turn, and one of its steps, which must
// not fail (a diff needs every pre-image the journal promised).
func (m *model) checkDiffs(h *historyModel, what string) {
	n := strconv.FormatUint(h.live[len(h.live)-1], 10)
	if _, errOut, code := m.w.run("diff", n, "--stat"); code != 0 {
		m.t.Fatalf("%s: diff %s: exit %d: %s", what, n, code, errOut)
	}
	if _, errOut, code := m.w.run("diff", n, "--step", "s3"); code != 0 && code != 5 {
		m.t.Fatalf("%s: diff %s --step s3: exit %d: %s", what, n, code, errOut)
	}
}

// model makes random changes to the mounted workspace.
type model struct {
	last tree // the workspace (but p/) at the last check
	// The person: a shell of uid nobody, its files (p/…: content), and
	// those written behind the mount since the last rescan, which its
	// shell leaves alone until the mount has seen them.
	personSh *shell
	person   files
	dirty    map[string]bool
	nb       int
	// Events: the last seen, and the rollback and unrevert events still
	// expected.
	lastEvent                   uint64
	wantRollbacks, wantUnrevert int
	t                           *testing.T
	w                           *workspace
	rng                         *rand.Rand
	log                         []string
	n                           int
}

func (m *model) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

func (m *model) tail() string {
	from := max(0, len(m.log)-60)
	return strings.Join(m.log[from:], "\n")
}

func (m *model) seedTree() {
	files := map[string]string{}
	for i := 0; i < 12; i++ {
		dir := []string{"", "a/", "a/b/", "c/", "c/d/e/"}[m.rng.IntN(5)]
		files[fmt.Sprintf("%sf%d", dir, i)] = m.content()
	}
	m.w.seed(files)
	m.seedPerson()
}

func (m *model) content() string {
	n := m.rng.IntN(6000)
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefgh\n"[m.rng.IntN(9)]
	}
	return string(b)
}

func (m *model) name() string {
	m.n++
	return fmt.Sprintf("n%d", m.n)
}

// list returns the workspace's files and directories (relative paths;
// "" is the root).
func (m *model) list() (files, dirs []string) {
	dirs = []string{""}
	root := m.w.mnt
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if rel == personDir {
			return filepath.SkipDir // the person's, which the agent leaves alone
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, rel)
		case d.Type().IsRegular():
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	sort.Strings(dirs)
	return files, dirs
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// op makes one random change. Failures of the operation itself (a name
// taken, a directory not empty) are fine: the agent's commands fail too.
func (m *model) op() {
	files, dirs := m.list()
	p := func(rel string) string { return filepath.Join(m.w.mnt, rel) }
	k := m.rng.IntN(19)
	if len(files) == 0 {
		k = 0
	}
	var desc string
	var err error
	switch k {
	case 0, 1: // create
		f := filepath.Join(pick(m.rng, dirs), m.name())
		desc, err = "create "+f, os.WriteFile(p(f), []byte(m.content()), 0o644)
	case 2: // overwrite
		f := pick(m.rng, files)
		desc, err = "overwrite "+f, os.WriteFile(p(f), []byte(m.content()), 0o644)
	case 3: // write in place
		f := pick(m.rng, files)
		off := m.rng.Int64N(4000)
		desc = fmt.Sprintf("pwrite %s at %d", f, off)
		c := m.content()
		err = m.pwrite(p(f), off, []byte(c[:min(200, len(c))]))
	case 4: // append
		f := pick(m.rng, files)
		desc = "append " + f
		var fh *os.File
		if fh, err = os.OpenFile(p(f), os.O_WRONLY|os.O_APPEND, 0); err == nil {
			_, err = fh.WriteString(m.content())
			fh.Close()
		}
	case 5: // truncate
		f := pick(m.rng, files)
		size := m.rng.Int64N(8000)
		desc, err = fmt.Sprintf("truncate %s to %d", f, size), os.Truncate(p(f), size)
	case 6: // rename a file, maybe over another
		f := pick(m.rng, files)
		to := filepath.Join(pick(m.rng, dirs), m.name())
		if m.rng.IntN(3) == 0 {
			to = pick(m.rng, files)
		}
		desc, err = fmt.Sprintf("mv %s %s", f, to), os.Rename(p(f), p(to))
	case 7: // rename a directory
		if len(dirs) < 2 {
			return
		}
		d := pick(m.rng, dirs[1:])
		parent := pick(m.rng, dirs)
		if parent == d || strings.HasPrefix(parent, d+"/") {
			return
		}
		to := filepath.Join(parent, m.name())
		desc, err = fmt.Sprintf("mv %s/ %s/", d, to), os.Rename(p(d), p(to))
	case 8: // delete a file
		f := pick(m.rng, files)
		desc, err = "rm "+f, os.Remove(p(f))
	case 9: // delete a tree
		if len(dirs) < 2 {
			return
		}
		d := pick(m.rng, dirs[1:])
		desc, err = "rm -rf "+d, os.RemoveAll(p(d))
	case 10: // mkdir -p, with a file in it
		d := filepath.Join(pick(m.rng, dirs), m.name(), m.name())
		desc = "mkdir -p " + d
		if err = os.MkdirAll(p(d), 0o755); err == nil {
			err = os.WriteFile(p(filepath.Join(d, m.name())), []byte(m.content()), 0o600)
		}
	case 11: // chmod
		f := pick(m.rng, append(files, dirs[1:]...))
		mode := pick(m.rng, []os.FileMode{0o600, 0o644, 0o755, 0o700, 0o640})
		desc, err = fmt.Sprintf("chmod %o %s", mode, f), os.Chmod(p(f), mode)
	case 12: // symlink
		l := filepath.Join(pick(m.rng, dirs), m.name())
		desc, err = "ln -s "+l, os.Symlink(pick(m.rng, []string{"../x", pick(m.rng, files), "/etc/passwd"}), p(l))
	case 13: // hard link
		f := pick(m.rng, files)
		l := filepath.Join(pick(m.rng, dirs), m.name())
		desc, err = fmt.Sprintf("ln %s %s", f, l), os.Link(p(f), p(l))
	case 14: // sed -i (a new file renamed over the old)
		f := pick(m.rng, files)
		desc = "sed -i " + f
		err = m.shell("sed -i s/a/A/g '" + f + "'")
	case 15: // cp over a file
		f, g := pick(m.rng, files), pick(m.rng, files)
		desc = fmt.Sprintf("cp %s %s", f, g)
		if f != g {
			err = m.shell("cp '" + f + "' '" + g + "'")
		}
	case 16: // xattr
		f := pick(m.rng, files)
		desc = "setxattr " + f
		if m.rng.IntN(3) == 0 {
			err = unix.Removexattr(p(f), "user.k")
		} else {
			err = unix.Setxattr(p(f), "user.k", []byte(m.name()), 0)
		}
	case 17: // touch -d
		f := pick(m.rng, append(files, dirs...))
		ts := time.Unix(m.rng.Int64N(1<<31), 0)
		desc, err = "touch -d "+f, os.Chtimes(p(f), ts, ts)
	case 18: // exchange two files
		if len(files) < 2 {
			return
		}
		a, b := pick(m.rng, files), pick(m.rng, files)
		desc = fmt.Sprintf("exchange %s %s", a, b)
		err = unix.Renameat2(unix.AT_FDCWD, p(a), unix.AT_FDCWD, p(b), unix.RENAME_EXCHANGE)
	}
	if err != nil {
		desc += " (failed: " + err.Error() + ")"
	}
	m.logf("%s", desc)
}

func (m *model) pwrite(path string, off int64, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = syscall.Pwrite(int(f.Fd()), b, off)
	return err
}

func (m *model) shell(script string) error {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = m.w.mnt
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// dump writes the operations and, once the daemon is stopped, every
// record in the journal to dir, for debugging a failure.
func (m *model) dump(dir string) {
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "ops.log"), []byte(strings.Join(m.log, "\n")+"\n"), 0o644)
	st := m.w.status()
	m.w.run("umount")
	m.w.pids = nil
	j, err := journal.Open(st.Journal, journal.Options{})
	if err != nil {
		m.t.Logf("dump: %v", err)
		return
	}
	defer j.Close()
	var b strings.Builder
	ts, _ := j.Turns()
	for _, t := range ts {
		fmt.Fprintf(&b, "turn %+v\n", t)
	}
	rbs, _ := j.Rollbacks()
	for _, r := range rbs {
		fmt.Fprintf(&b, "rollback %+v\n", r)
	}
	j.Scan(0, 0, false, func(r *journal.Record) error {
		fmt.Fprintf(&b, "%d t%d g%d %s cause=%d type=%o ino=%d ino2=%d %q %q aside=%q flags=%d size=%d off=%d len=%d not-agent=%v pid=%d\n",
			r.Seq, r.Turn, r.Group, r.Kind, r.Cause, r.Type, r.Ino, r.Ino2, r.Path, r.Path2, r.Aside, r.Flags, r.Attr.Size, r.Off, r.Len, r.NotAgent, r.Caller.Pid)
		return nil
	})
	os.WriteFile(filepath.Join(dir, "records.log"), []byte(b.String()), 0o644)
	var a strings.Builder
	ents, _ := os.ReadDir(filepath.Join(m.w.dir, ".cowfs", "aside"))
	for _, e := range ents {
		var st syscall.Stat_t
		syscall.Lstat(filepath.Join(m.w.dir, ".cowfs", "aside", e.Name()), &st)
		fmt.Fprintf(&a, "%s ino=%d nlink=%d mode=%o\n", e.Name(), st.Ino, st.Nlink, st.Mode)
	}
	os.WriteFile(filepath.Join(dir, "aside.log"), []byte(a.String()), 0o644)
}
