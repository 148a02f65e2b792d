package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/ctl"
)

// The preview is the rollback, through the CLI on a real mount (the
// rollback package's TestPreviewIsTheRollback runs many more scenarios
// on a plain directory): random turns of shell changes, changes outside
// turns and behind the mount, and rollbacks to random turns — stacked,
// sometimes forced, sometimes unreverted — each first run with
// --dry-run, which must report the same paths, actions, reasons,
// from/to, types and counts as the rollback then does. -long runs more
// seeds; a failure prints the seed and the scenario.
func TestPreviewIsTheRollbackCLI(t *testing.T) {
	seeds := []uint64{1, 2}
	if *long {
		seeds = nil
		for s := uint64(1); s <= 20; s++ {
			seeds = append(seeds, s)
		}
	}
	if *modelSeed != 0 {
		seeds = []uint64{*modelSeed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			p := &previewScenario{w: outsideWorkspace(t, map[string]string{"a/f": "af\n", "b/g": "bg\n", "f": "f\n"}),
				rng: rand.New(rand.NewPCG(seed, 0x9e7))}
			defer func() {
				if t.Failed() {
					t.Logf("seed %d (replay: go test ./test/e2e -run TestPreviewIsTheRollbackCLI -seed %d); the scenario:\n%s",
						seed, seed, strings.Join(p.log, "\n"))
				}
			}()
			p.run(6)
		})
	}
}

type previewScenario struct {
	w   *workspace
	rng *rand.Rand
	log []string
	n   int
}

func (p *previewScenario) run(turns int) {
	w := p.w
	for i := 0; i < turns && !w.t.Failed(); i++ {
		p.log = append(p.log, "-- turn")
		w.cowfs("turn", "begin")
		for k := 2 + p.rng.IntN(4); k > 0; k-- {
			p.change(w.mnt)
		}
		w.cowfs("turn", "end")
		switch p.rng.IntN(3) {
		case 0:
			p.log = append(p.log, "-- outside a turn")
			p.change(w.mnt)
		case 1:
			p.log = append(p.log, "-- behind the mount")
			p.change(w.dir)
		}
		if i > 0 && p.rng.IntN(2) == 0 {
			p.rollback()
			if p.rng.IntN(3) == 0 {
				p.log = append(p.log, "unrevert")
				w.cowfs("unrevert", "--force")
			}
		}
	}
	p.rollback()
}

// rollback previews and runs a rollback to a random turn of the window.
func (p *previewScenario) rollback() {
	w := p.w
	var list ctl.TurnList
	w.cowfsJSON(&list, "log")
	if len(list.Turns) == 0 {
		return
	}
	to := fmt.Sprint(list.Turns[p.rng.IntN(len(list.Turns))].Num)
	args := []string{"rollback", to}
	if p.rng.IntN(4) == 0 {
		args = append(args, "--force")
	}
	p.log = append(p.log, strings.Join(args, " "))
	dry := previewOf(w, append(args, "--dry-run")...)
	real := previewOf(w, args...)
	if dry != real {
		w.t.Errorf("%s did not do what its dry run said:\ndry run:\n%s\nrun:\n%s", strings.Join(args, " "), dry, real)
	}
}

// previewOf runs cowfs with args and --json and renders its report: a
// line per path, sorted, then the counts.
func previewOf(w *workspace, args ...string) string {
	w.t.Helper()
	var res ctl.RollbackResult
	w.cowfsJSON(&res, args...)
	var lines []string
	for _, a := range res.Paths {
		b, _ := json.Marshal(a)
		lines = append(lines, string(b))
	}
	sort.Strings(lines)
	c, _ := json.Marshal(res.Counts)
	lines = append(lines, string(c))
	if !res.Complete {
		lines = append(lines, "stopped: "+res.Failure)
	}
	return strings.Join(lines, "\n")
}

var previewNames = []string{"a", "b", "f", "g"}

func (p *previewScenario) randPath() string {
	parts := []string{}
	for d := 1 + p.rng.IntN(2); d > 0; d-- {
		parts = append(parts, previewNames[p.rng.IntN(len(previewNames))])
	}
	return strings.Join(parts, "/")
}

func typeAt(root, rel string) uint32 {
	var st unix.Stat_t
	if unix.Lstat(path.Join(root, rel), &st) != nil {
		return 0
	}
	return st.Mode & syscall.S_IFMT
}

// change makes one random change to the workspace seen at root (the
// mount, or the backing directory behind it).
func (p *previewScenario) change(root string) {
	for try := 0; try < 20 && !p.try(root); try++ {
	}
}

// try makes a random change if the path it picks allows, and reports
// whether it did.
func (p *previewScenario) try(root string) bool {
	w := p.w
	q := p.randPath()
	t := typeAt(root, q)
	dirOK := path.Dir(q) == "." || typeAt(root, path.Dir(q)) == syscall.S_IFDIR
	p.n++
	var script string
	switch op := p.rng.IntN(8); {
	case t == 0 && dirOK && op < 3:
		script = fmt.Sprintf("echo %d > %s", p.n, q)
	case t == 0 && dirOK && op == 3:
		script = "mkdir " + q
	case t == syscall.S_IFREG && op < 3:
		script = fmt.Sprintf("echo %d >> %s", p.n, q)
	case t == syscall.S_IFREG && op == 3:
		script = fmt.Sprintf("sed -i s/1/x/ %s", q)
	case t == syscall.S_IFREG && op == 4:
		script = "chmod 600 " + q
	case t == syscall.S_IFREG && op == 5:
		script = "rm " + q
	case t == syscall.S_IFDIR && op == 5:
		if ents, _ := os.ReadDir(path.Join(root, q)); len(ents) == 0 {
			script = "rmdir " + q
		}
	case t != 0 && op >= 6:
		to := p.randPath()
		tt := typeAt(root, to)
		toDirOK := path.Dir(to) == "." || typeAt(root, path.Dir(to)) == syscall.S_IFDIR
		switch {
		case to == q || strings.HasPrefix(to, q+"/") || strings.HasPrefix(q, to+"/"):
		case op == 7 && tt != 0:
			p.log = append(p.log, fmt.Sprintf("%s: exchange %s %s", p.where(root), q, to))
			if err := unix.Renameat2(unix.AT_FDCWD, path.Join(root, q), unix.AT_FDCWD, path.Join(root, to), unix.RENAME_EXCHANGE); err != nil {
				w.t.Fatalf("exchange %s %s: %v", q, to, err)
			}
			return true
		case tt == 0 && toDirOK, tt == syscall.S_IFREG && t == syscall.S_IFREG:
			script = fmt.Sprintf("mv -T %s %s", q, to)
		}
	}
	if script == "" {
		return false
	}
	p.log = append(p.log, p.where(root)+": "+script)
	w.shIn(root, script)
	return true
}

func (p *previewScenario) where(root string) string {
	if root == p.w.dir {
		return "behind the mount"
	}
	return "mount"
}
