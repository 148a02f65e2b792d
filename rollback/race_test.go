package rollback

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/journal"
)

// The executor under concurrent renames: a rollback of a turn's
// in-place changes (writes, truncations, chmods, xattrs) runs while
// another goroutine exchanges the name of each changed file, as its
// step runs, with that of a bystander, a file the turn never touched.
// Whatever the interleaving, a step acts only on the inode it checked:
// every bystander keeps its bytes, mode and xattrs, and every changed
// file ends, in each of these, as the turn left it or as it was
// before. (test/e2e/race_test.go attacks the same as another user,
// through the daemon and offline, at each call of each step.)
func TestExecutorUnderRenames(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for i := range rounds {
		t.Run(fmt.Sprint(i), executorUnderRenames)
	}
}

// fileState is what the test compares of a file.
type fileState struct {
	content string
	mode    uint32
	xattr   string
}

func executorUnderRenames(t *testing.T) {
	const n = 32 // changed files, and as many bystanders
	w := newWS(t)
	for i := range n {
		w.put(fmt.Sprintf("d/t%d", i), fmt.Sprintf("target %d, before the turn\n", i))
		w.put(fmt.Sprintf("d/b%d", i), fmt.Sprintf("bystander %d, never in a turn\n", i))
	}
	pre := w.filesByInode()
	turn := w.turn(func() {
		for i := range n {
			p := fmt.Sprintf("d/t%d", i)
			switch i % 4 {
			case 0:
				w.write(p, 0, "XXXX")
			case 1:
				w.truncate(p, 3)
			case 2:
				w.chmod(p, 0o600)
			case 3:
				w.setxattr(p, "user.test", []byte("set in the turn"))
			}
		}
	})
	post := w.filesByInode()

	// The racer exchanges the name of the file the running step is
	// about (t7) with its bystander's (b7), without pause: whether the
	// step finds its file there, and whether it is still there when the
	// step acts, is a toss. Each step checks and acts within
	// microseconds; a durable journal (an fsync a record) stretches the
	// time between, as a loaded machine would.
	w.restart(journal.Options{Reserve: 1 << 20, Sync: true})
	steps := plannedPaths(t, w, turn)
	var next atomic.Int64
	w.env.AfterStep = func(n int) { next.Store(int64(n)) }
	var stop atomic.Bool
	var wg sync.WaitGroup
	exchanges := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			i := int(next.Load())
			if i >= len(steps) {
				continue
			}
			a := steps[i]
			b := strings.Replace(a, "/t", "/b", 1)
			if unix.Renameat2(unix.AT_FDCWD, w.abs(a), unix.AT_FDCWD, w.abs(b), unix.RENAME_EXCHANGE) == nil {
				exchanges++
			}
		}
	}()
	out, err := Rollback(w.env, turn, false, false)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}

	after := w.filesByInode()
	for ino, was := range pre {
		got, turned := after[ino], post[ino]
		switch {
		case was == turned && got != was:
			t.Errorf("bystander inode %d changed: was %+v, now %+v", ino, was, got)
		case was != turned && !between(got, was, turned):
			t.Errorf("changed inode %d is neither as before nor as after the turn: before %+v, after the turn %+v, now %+v",
				ino, was, turned, got)
		}
	}
	t.Logf("%d exchanges during the rollback: %+v", exchanges, out.Counts)
}

// between reports whether each part of s is as in a or as in b. A
// file's data and size are restored by different steps, of which one
// may run and the other find the file gone: its length is a's or b's,
// and each byte a's, b's or zero (the hole a size restore leaves).
func between(s, a, b fileState) bool {
	if len(s.content) != len(a.content) && len(s.content) != len(b.content) {
		return false
	}
	for i := range len(s.content) {
		c := s.content[i]
		if !(c == 0 || i < len(a.content) && c == a.content[i] || i < len(b.content) && c == b.content[i]) {
			return false
		}
	}
	return (s.mode == a.mode || s.mode == b.mode) && (s.xattr == a.xattr || s.xattr == b.xattr)
}

// plannedPaths returns the path of each step a rollback of turn would
// take, in order, planned as Rollback plans it.
func plannedPaths(t *testing.T, w *ws, turn journal.Turn) []string {
	recs, err := scanBack(w.j, turn.StartSeq, w.j.NextSeq())
	if err != nil {
		t.Fatal(err)
	}
	p := &planner{env: w.env, target: func(r *rec) bool { return r.Turn != 0 || r.Group != 0 }}
	defer p.done()
	plan, err := p.build(recs)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	plan.eachStep(0, func(_ int, s *Step) error {
		paths = append(paths, s.Path)
		return nil
	})
	return paths
}

// filesByInode reads every regular file of the workspace by inode
// number.
func (w *ws) filesByInode() map[uint64]fileState {
	w.t.Helper()
	files := map[uint64]fileState{}
	err := filepath.Walk(w.abs("d"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		x := make([]byte, 256)
		m, err := unix.Lgetxattr(p, "user.test", x)
		if err != nil {
			m = 0
		}
		files[st.Ino] = fileState{content: string(b), mode: st.Mode, xattr: string(bytes.Clone(x[:m]))}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return files
}
