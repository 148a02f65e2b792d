package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// Rollback benchmarks, on a real mount with the real daemon: only the
// rollback request is timed; each iteration makes its turn first.
//
//	go test ./test/e2e -run '^$' -bench Rollback -benchtime 5x

func BenchmarkRollback1000ModifiedFiles(b *testing.B) {
	benchRollback(b, 1000, func(w *workspace) {
		for i := 0; i < 1000; i++ {
			f, err := os.OpenFile(w.path(fmt.Sprintf("src/f%04d", i)), os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			f.WriteAt([]byte("changed by the turn\n"), 0)
			f.Close()
		}
	})
}

func BenchmarkRollbackDeleted10000FileTree(b *testing.B) {
	benchRollback(b, 10000, func(w *workspace) {
		if err := os.RemoveAll(w.path("src")); err != nil {
			b.Fatal(err)
		}
	})
}

func benchRollback(b *testing.B, n int, turn func(*workspace)) {
	w := newWorkspace(b)
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("src/d%03d/f%04d", i/100, i)] = fmt.Sprintf("file %d\n%s", i, make([]byte, 2000))
	}
	w.seed(files)
	// The 1000-file case writes to src/fNNNN.
	for i := 0; i < min(n, 1000); i++ {
		os.WriteFile(w.path(fmt.Sprintf("src/f%04d", i)), make([]byte, 4096), 0o644)
	}
	w.mount()
	c := ctl.NewClient(w.status().Socket)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		t, err := c.BeginTurn(ctx, ctl.BeginTurnRequest{})
		if err != nil {
			b.Fatal(err)
		}
		turn(w)
		if _, err := c.EndTurn(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := c.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(fmt.Sprint(t.Num))})
		if err != nil {
			b.Fatal(err)
		}
		if res.Counts.Skipped != 0 {
			b.Fatalf("skipped: %+v", res.Counts)
		}
	}
}
