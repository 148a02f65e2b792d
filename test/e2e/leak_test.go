package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// No goroutine or descriptor leak across 1,000 turns and 100 rollbacks
// and unreverts, and memory stays bounded: the daemon's own counts
// (status "resources") after a warm-up and at the end.
func TestNoLeakAcrossTurns(t *testing.T) {
	w := newWorkspace(t)
	files := map[string]string{}
	for i := 0; i < 10; i++ {
		files[fmt.Sprintf("f%d", i)] = "0\n"
	}
	w.seed(files)
	w.mount()
	c := ctl.NewClient(w.status().Socket)
	ctx := context.Background()
	turn := func(i int) {
		if _, err := c.BeginTurn(ctx, ctl.BeginTurnRequest{}); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if err := os.WriteFile(w.path(fmt.Sprintf("f%d", i%10)), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			os.Remove(w.path(fmt.Sprintf("f%d", (i+3)%10)))
		}
		if _, err := c.EndTurn(ctx); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	resources := func() ctl.Resources {
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Resources
	}
	for i := 0; i < 50; i++ {
		turn(i)
	}
	time.Sleep(200 * time.Millisecond) // background prunes settle
	before := resources()
	rollbacks := 0
	for i := 50; i < 1050; i++ {
		turn(i)
		if i%10 == 9 {
			st, _ := c.Status(ctx)
			if _, err := c.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(fmt.Sprint(st.LatestTurn)), Force: true}); err != nil {
				t.Fatalf("rollback after turn %d: %v", i, err)
			}
			rollbacks++
			if i%20 == 9 {
				if _, err := c.Unrevert(ctx, ctl.UnrevertRequest{Force: true}); err != nil {
					t.Fatalf("unrevert after turn %d: %v", i, err)
				}
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
	after := resources()
	t.Logf("after 50 turns: %+v; after 1,000 more and %d rollbacks: %+v", before, rollbacks, after)
	if after.Goroutines > before.Goroutines+8 {
		t.Errorf("goroutines grew from %d to %d", before.Goroutines, after.Goroutines)
	}
	if after.OpenFiles > before.OpenFiles+8 {
		t.Errorf("open descriptors grew from %d to %d", before.OpenFiles, after.OpenFiles)
	}
	if after.MaxRSSBytes > 128<<20 {
		t.Errorf("peak RSS %d MiB, over 128 MiB", after.MaxRSSBytes>>20)
	}
}
