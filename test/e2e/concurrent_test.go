package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// Two turns begun at once: one opens, the other is told busy. A
// rollback or unrevert asked for while a rollback runs is told busy.
func TestConcurrentRequests(t *testing.T) {
	w := newWorkspace(t)
	files := map[string]string{}
	for i := 0; i < 50; i++ {
		files[fmt.Sprintf("tree/d%d/f%02d", i%5, i)] = "x"
	}
	w.seed(files)
	paused, resume := w.pauseRollbacks(1)
	w.mount()
	c := ctl.NewClient(w.status().Socket)
	ctx := context.Background()

	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.BeginTurn(ctx, ctl.BeginTurnRequest{})
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), &ctl.Error{Code: ctl.CodeBusy}) {
		t.Fatalf("two turns begun at once: %v / %v", errs[0], errs[1])
	}
	w.sh("rm -rf tree")
	w.cowfs("turn", "end")

	// A rollback paused after its first step holds the rollback lock:
	// a second rollback and an unrevert are told busy, not queued.
	first := make(chan error, 1)
	go func() {
		_, err := c.Rollback(ctx, ctl.RollbackRequest{To: "1"})
		first <- err
	}()
	paused()
	// Told at once, not after the first finishes (it never will, while
	// paused).
	quick, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Rollback(quick, ctl.RollbackRequest{To: "1"}); !errors.Is(err, &ctl.Error{Code: ctl.CodeBusy}) {
		t.Errorf("a second rollback while one runs: %v, want busy", err)
	}
	if _, err := c.Unrevert(quick, ctl.UnrevertRequest{}); !errors.Is(err, &ctl.Error{Code: ctl.CodeBusy}) {
		t.Errorf("an unrevert while a rollback runs: %v, want busy", err)
	}
	resume()
	if err := <-first; err != nil {
		t.Fatalf("the first rollback: %v", err)
	}
	if got := len(snapshot(t, w.path("tree"))); got != 56 {
		t.Errorf("after the rollback the tree has %d entries, want 56", got)
	}
}
