package e2e

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cowfs/cowfs/test/stress"
)

// Verified stress, short form (test/stress/run.sh has the long one):
// fsx-style exercisers write, truncate, punch holes and write through
// shared mappings in files that existed before, verifying every read,
// while turns begin and end and steps mark epochs under them. Every
// rollback across the stressed turns is then exact against snapshots.
func TestStressVerifiedRollback(t *testing.T) {
	w := newWorkspace(t)
	const files, turns, ops = 3, 3, 250
	rnd := rand.New(rand.NewSource(1))
	for i := range files {
		b := make([]byte, 100_000+rnd.Intn(100_000))
		rnd.Read(b)
		if err := os.WriteFile(filepath.Join(w.dir, fmt.Sprintf("f%d", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.mount()
	xs := make([]*stress.Exerciser, files)
	for i := range xs {
		x, err := stress.New(w.path(fmt.Sprintf("f%d", i)), stress.Options{Seed: int64(i + 1), MaxSize: 256 << 10, MaxOp: 32 << 10})
		if err != nil {
			t.Fatal(err)
		}
		xs[i] = x
		defer x.Close()
	}
	before := []tree{snapshot(t, w.mnt)}
	for turn := 1; turn <= turns; turn++ {
		w.cowfs("turn", "begin")
		var wg sync.WaitGroup
		errs := make([]error, files)
		done := make(chan struct{})
		for i, x := range xs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = x.Run(ops)
			}()
		}
		go func() { wg.Wait(); close(done) }()
		// Epochs begin and end under the running exercisers.
		for step := 0; ; step++ {
			select {
			case <-done:
			default:
				w.cowfs("turn", "step", fmt.Sprintf("s%d", step))
				continue
			}
			break
		}
		for _, err := range errs {
			if err != nil {
				t.Fatalf("turn %d: %v", turn, err)
			}
		}
		w.cowfs("turn", "end")
		before = append(before, snapshot(t, w.mnt))
	}
	for _, x := range xs {
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	w.rollback(fmt.Sprint(turns))
	sameTree(t, w.mnt, before[turns-1], fmt.Sprintf("after rolling back turn %d", turns))
	w.rollback("1")
	sameTree(t, w.mnt, before[0], "after rolling back every stressed turn")
}
