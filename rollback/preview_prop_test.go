package rollback

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var (
	previewLong = flag.Bool("long", false, "TestPreviewIsTheRollback: many more scenarios, and longer ones")
	previewSeed = flag.Uint64("seed", 0, "TestPreviewIsTheRollback: run this one seed (0: the default seeds, or the clock with -long)")
)

// personsChange makes change the person's: made during a turn through
// the mount, but by a process outside the agent's scope (#32), so that
// rollbacks treat it as they treat a change outside a turn.
func personsChange(w *ws, change func()) { w.asPerson(change) }

// TestPreviewIsTheRollback: random scenarios — turns of changes through
// the mount, changes outside turns, changes behind the mount's back,
// the person's changes (personsChange), rollbacks to random turns in
// the window, forced or not, stacked on each other and sometimes
// unreverted — and before every rollback its dry run, which must
// report the same actions for the same paths (path, action, reason,
// from, to, type) and the same counts as the rollback then does.
// A failure prints the seed and the scenario; -seed N replays it,
// -long runs hundreds of longer ones.
func TestPreviewIsTheRollback(t *testing.T) {
	seeds, turns := []uint64{}, 10
	for s := uint64(1); s <= 12; s++ {
		seeds = append(seeds, s)
	}
	switch {
	case *previewSeed != 0:
		seeds = []uint64{*previewSeed}
	case *previewLong:
		base := uint64(time.Now().UnixNano())
		seeds, turns = seeds[:0], 30
		for i := uint64(0); i < 100; i++ {
			seeds = append(seeds, base+i)
		}
	}
	if *previewLong {
		turns = 30
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := &scenario{w: newWS(t), rng: rand.New(rand.NewPCG(seed, 0x9e7)), seed: seed}
			defer func() {
				if t.Failed() {
					long := ""
					if *previewLong {
						long = " -long"
					}
					t.Logf("seed %d (replay: go test ./rollback -run TestPreviewIsTheRollback -seed %d%s -v); the scenario:\n%s",
						seed, seed, long, strings.Join(s.log, "\n"))
				}
			}()
			s.run(turns)
		})
	}
}

// scenario makes random changes to a small namespace, where names
// collide often: renames over files and directories, exchanges,
// directories made by one turn and filled by another.
type scenario struct {
	w    *ws
	rng  *rand.Rand
	seed uint64
	log  []string
	n    int // files made, for distinct contents
}

func (s *scenario) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

func (s *scenario) run(turns int) {
	w := s.w
	for _, p := range []string{"a/f", "a/c/g", "b/f", "f", "g"} {
		w.put(p, "seed "+p)
	}
	for i := 0; i < turns && !w.t.Failed(); i++ {
		s.logf("-- turn")
		w.begin()
		for k := 2 + s.rng.IntN(6); k > 0; k-- {
			if s.rng.IntN(5) == 0 {
				personsChange(w, func() { s.logf("(the person's)"); s.change() })
				continue
			}
			s.change()
		}
		w.end()
		switch s.rng.IntN(4) {
		case 0:
			s.logf("-- outside a turn")
			for k := 1 + s.rng.IntN(3); k > 0; k-- {
				s.change()
			}
		case 1:
			s.logf("-- behind the mount")
			for k := 1 + s.rng.IntN(2); k > 0; k-- {
				s.behind()
			}
		}
		for s.rng.IntN(3) == 0 && !w.t.Failed() {
			s.rollback()
			if s.rng.IntN(4) == 0 {
				s.logf("unrevert")
				if _, err := Unrevert(w.env, s.rng.IntN(2) == 0); err != nil {
					w.t.Fatalf("unrevert: %v", err)
				}
			}
		}
	}
}

// rollback rolls back to a random turn of the window, dry first.
func (s *scenario) rollback() {
	w := s.w
	turns, err := w.j.Turns()
	if err != nil {
		w.t.Fatal(err)
	}
	if len(turns) == 0 {
		return
	}
	to := turns[s.rng.IntN(len(turns))]
	force := s.rng.IntN(4) == 0
	s.logf("rollback %d (force %v)", to.Num, force)
	w.previewThenRun(to, force)
}

// Paths.

var scenarioNames = []string{"a", "b", "c", "f", "g"}

func (s *scenario) randPath() string {
	var parts []string
	for d := 1 + s.rng.IntN(3); d > 0; d-- {
		parts = append(parts, scenarioNames[s.rng.IntN(len(scenarioNames))])
	}
	return strings.Join(parts, "/")
}

// typeOf returns the S_IFMT of what is at rel, 0 for nothing.
func (s *scenario) typeOf(rel string) uint32 {
	var st unix.Stat_t
	if unix.Lstat(s.w.abs(rel), &st) != nil {
		return 0
	}
	return st.Mode & syscall.S_IFMT
}

// pick returns a random path that holds something ok accepts, and
// false after a few misses.
func (s *scenario) pick(ok func(rel string, typ uint32) bool) (string, bool) {
	for try := 0; try < 40; try++ {
		p := s.randPath()
		if t := s.typeOf(p); t != 0 && ok(p, t) {
			return p, true
		}
	}
	return "", false
}

// free returns a random path that holds nothing, in a directory.
func (s *scenario) free() (string, bool) {
	for try := 0; try < 40; try++ {
		p := s.randPath()
		dir := path.Dir(p)
		if s.typeOf(p) == 0 && (dir == "." || s.typeOf(dir) == syscall.S_IFDIR) {
			return p, true
		}
	}
	return "", false
}

func (s *scenario) empty(rel string) bool {
	ents, err := os.ReadDir(s.w.abs(rel))
	return err == nil && len(ents) == 0
}

// within reports whether p is d or beneath it.
func within(p, d string) bool { return p == d || strings.HasPrefix(p, d+"/") }

func isFile(_ string, t uint32) bool     { return t == syscall.S_IFREG }
func notSymlink(_ string, t uint32) bool { return t != syscall.S_IFLNK }

func (s *scenario) content() string {
	s.n++
	return strings.Repeat(fmt.Sprintf("%d.", s.n), 1+s.rng.IntN(5))
}

// Changes.

// change makes one random change through the mount.
func (s *scenario) change() {
	w := s.w
	switch s.rng.IntN(12) {
	case 0, 1:
		if p, ok := s.free(); ok {
			c := s.content()
			s.logf("create %s %q", p, c)
			w.create(p, c)
		}
	case 2:
		if p, ok := s.free(); ok {
			s.logf("mkdir %s", p)
			w.mkdir(p)
		}
	case 3:
		if p, ok := s.free(); ok {
			s.logf("symlink %s", p)
			w.symlink("target", p)
		}
	case 4:
		if p, ok := s.pick(isFile); ok {
			off, c := int64(s.rng.IntN(8)), s.content()
			s.logf("write %s at %d %q", p, off, c)
			w.write(p, off, c)
		}
	case 5:
		if p, ok := s.pick(isFile); ok {
			size := int64(s.rng.IntN(6))
			s.logf("truncate %s %d", p, size)
			w.truncate(p, size)
		}
	case 6:
		if p, ok := s.pick(notSymlink); ok {
			mode := []os.FileMode{0o700, 0o755, 0o644}[s.rng.IntN(3)]
			s.logf("chmod %s %o", p, mode)
			w.chmod(p, mode)
		}
	case 7:
		if p, ok := s.pick(notSymlink); ok {
			v := []byte(s.content())
			s.logf("setxattr %s %q", p, v)
			w.setxattr(p, "user.test", v)
		}
	case 8:
		if p, ok := s.pick(func(p string, t uint32) bool { return t != syscall.S_IFDIR || s.empty(p) }); ok {
			s.logf("remove %s", p)
			w.remove(p)
		}
	case 9:
		if from, ok := s.pick(isFile); ok {
			if to, ok := s.free(); ok {
				s.logf("link %s %s", from, to)
				w.link(from, to)
			}
		}
	case 10, 11:
		s.rename()
	}
}

// rename renames a random path: to a free path, over a file (or an
// empty directory, for a directory), or exchanges it with another.
func (s *scenario) rename() {
	w := s.w
	from, ok := s.pick(func(string, uint32) bool { return true })
	if !ok {
		return
	}
	isDir := s.typeOf(from) == syscall.S_IFDIR
	switch s.rng.IntN(3) {
	case 0:
		to, ok := s.free()
		if !ok || isDir && within(to, from) {
			return
		}
		flags := uint32(0)
		if s.rng.IntN(2) == 0 {
			flags = unix.RENAME_NOREPLACE
		}
		s.logf("rename %s %s (flags %d)", from, to, flags)
		w.rename(from, to, flags)
	case 1:
		to, ok := s.pick(func(p string, t uint32) bool {
			if p == from || within(p, from) || within(from, p) {
				return false
			}
			if isDir {
				return t == syscall.S_IFDIR && s.empty(p)
			}
			return t != syscall.S_IFDIR
		})
		if !ok {
			return
		}
		s.logf("rename %s over %s", from, to)
		w.rename(from, to, 0)
	case 2:
		to, ok := s.pick(func(p string, t uint32) bool { return !within(p, from) && !within(from, p) })
		if !ok {
			return
		}
		s.logf("exchange %s %s", from, to)
		w.rename(from, to, unix.RENAME_EXCHANGE)
	}
}

// behind makes one random change behind the mount's back, journaled
// as package rescan finds it.
func (s *scenario) behind() {
	w := s.w
	switch s.rng.IntN(3) {
	case 0:
		if p, ok := s.pick(isFile); ok {
			c := s.content()
			s.logf("behind: write %s %q", p, c)
			w.outside(p, func(abs string) error { return os.WriteFile(abs, []byte(c), 0o644) })
		}
	case 1:
		if p, ok := s.free(); ok {
			c := s.content()
			s.logf("behind: create %s %q", p, c)
			w.outside(p, func(abs string) error { return os.WriteFile(abs, []byte(c), 0o644) })
		}
	case 2:
		if p, ok := s.pick(isFile); ok {
			s.logf("behind: remove %s", p)
			w.outside(p, os.Remove)
		}
	}
}
