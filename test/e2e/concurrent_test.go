package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// Two rollbacks at once: one runs, the other is told busy. Two turns
// begun at once: one opens, the other is told busy.
func TestConcurrentRequests(t *testing.T) {
	w := newWorkspace(t)
	files := map[string]string{}
	for i := 0; i < 5000; i++ {
		files[fmt.Sprintf("tree/d%02d/f%04d", i%50, i)] = "x"
	}
	w.seed(files)
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

	started := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				<-started
			} else {
				close(started)
			}
			_, errs[i] = c.Rollback(ctx, ctl.RollbackRequest{To: "1"})
		}()
	}
	wg.Wait()
	busy := 0
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, &ctl.Error{Code: ctl.CodeBusy}):
			busy++
		default:
			t.Errorf("rollback: %v", err)
		}
	}
	// The second may also arrive after the first finished, and then
	// runs; what must never happen is two at once, or a failure.
	if busy == 0 {
		t.Logf("the second rollback came after the first finished")
	}
	if got := len(snapshot(t, w.path("tree"))); got != 5051 {
		t.Errorf("after the rollbacks the tree has %d entries, want 5051", got)
	}
}
