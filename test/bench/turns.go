package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// Workloads of the turn suite.
const (
	wCheckpoint  = "turn checkpoint, %dk files"
	wRestoreTurn = "undo a 10-file turn, %dk files"
	wRollback1k  = "rollback: 1,000 files modified"
	wRollback10k = "rollback: 10,000-file tree created"
	wAfter10k    = "next turn checkpoint (settles that rollback)"
	tCowfs       = "cowfs"
	tGit         = "git shadow"
)

// turnSuite compares what a turn checkpoint costs: cowfs's turn begin
// and end (over the control socket, as a harness calls them) against a
// git snapshot of the whole workspace into a shadow repository (what
// TanStack snapshots(), Cline, Gemini CLI and Codex do), on workspaces
// of growing size; and undoing that turn, by rollback and by restoring
// from the shadow repository.
func turnSuite(c *config, r *results) error {
	for _, n := range c.sizes {
		fmt.Printf("turns: %d-file workspace\n", n)
		base := filepath.Join(c.work, fmt.Sprintf("turns-%d", n))
		ws := filepath.Join(base, "ws")
		if err := makeWorkspace(ws, n); err != nil {
			return err
		}
		if err := gitTurns(c, r, base, ws, n); err != nil {
			return err
		}
		if err := cowfsTurns(c, r, base, ws, n); err != nil {
			return err
		}
		os.RemoveAll(base)
	}
	return boundaryRows(c, r)
}

// makeWorkspace writes n small files, 100 to a directory.
func makeWorkspace(ws string, n int) error {
	for i := 0; i < n; i++ {
		dir := filepath.Join(ws, fmt.Sprintf("d%03d/e%02d", i/10000, (i/100)%100))
		if i%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d.txt", i)), []byte(fmt.Sprintf("file %d\n%0512d\n", i, i)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// edit changes 10 files of the workspace at root, as a turn would.
func edit(root string, run int) error {
	for i := 0; i < 10; i++ {
		p := filepath.Join(root, "d000", fmt.Sprintf("e%02d", i), fmt.Sprintf("f%06d.txt", i*100))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("edited in run %d\n", run)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func gitTurns(c *config, r *results, base, ws string, n int) error {
	shadow := filepath.Join(base, "shadow.git")
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"--git-dir=" + shadow, "--work-tree=" + ws,
			"-c", "user.name=bench", "-c", "user.email=bench@localhost"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	if err := git("init", "-q"); err != nil {
		return err
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	if err := git("commit", "-qm", "base"); err != nil {
		return err
	}
	for run := 1; run <= c.runs; run++ {
		if err := edit(ws, run); err != nil {
			return err
		}
		start := time.Now()
		if err := git("add", "-A"); err != nil {
			return err
		}
		if err := git("commit", "-qm", "turn"); err != nil {
			return err
		}
		r.add(suiteTurns, fmt.Sprintf(wCheckpoint, n/1000), tGit, run, time.Since(start).Seconds(), "s")
		start = time.Now()
		if err := git("checkout", "-qf", "HEAD~1", "--", "."); err != nil {
			return err
		}
		r.add(suiteTurns, fmt.Sprintf(wRestoreTurn, n/1000), tGit, run, time.Since(start).Seconds(), "s")
		if err := git("reset", "-q", "--hard", "HEAD"); err != nil {
			return err
		}
	}
	return nil
}

func cowfsTurns(c *config, r *results, base, ws string, n int) error {
	cw, cl, err := mountAt(c, base, ws)
	if err != nil {
		return err
	}
	defer cw.teardown()
	ctx := context.Background()
	rollback := func(t ctl.Turn) (time.Duration, error) {
		start := time.Now()
		res, err := cl.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(fmt.Sprint(t.Num))})
		if err == nil && res.Counts.Skipped != 0 {
			err = fmt.Errorf("rollback skipped %d paths", res.Counts.Skipped)
		}
		return time.Since(start), err
	}
	for run := 1; run <= c.runs; run++ {
		start := time.Now()
		t, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{})
		if err != nil {
			return err
		}
		begin := time.Since(start)
		if err := edit(cw.mnt, run); err != nil {
			return err
		}
		start = time.Now()
		if _, err := cl.EndTurn(ctx); err != nil {
			return err
		}
		r.add(suiteTurns, fmt.Sprintf(wCheckpoint, n/1000), tCowfs, run, (begin + time.Since(start)).Seconds(), "s")
		d, err := rollback(t)
		if err != nil {
			return err
		}
		r.add(suiteTurns, fmt.Sprintf(wRestoreTurn, n/1000), tCowfs, run, d.Seconds(), "s")
	}
	if n != 10000 {
		return nil
	}
	// Larger turns, on the 10k workspace.
	for run := 1; run <= c.runs; run++ {
		t, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{})
		if err != nil {
			return err
		}
		for i := 0; i < 1000; i++ {
			p := filepath.Join(cw.mnt, fmt.Sprintf("d000/e%02d/f%06d.txt", i/100, i))
			if err := os.WriteFile(p, []byte("modified\n"), 0o644); err != nil {
				return err
			}
		}
		cl.EndTurn(ctx)
		d, err := rollback(t)
		if err != nil {
			return err
		}
		r.add(suiteTurns, wRollback1k, tCowfs, run, d.Seconds(), "s")
		if t, err = cl.BeginTurn(ctx, ctl.BeginTurnRequest{}); err != nil {
			return err
		}
		if err := makeWorkspace(filepath.Join(cw.mnt, "new"), 10000); err != nil {
			return err
		}
		cl.EndTurn(ctx)
		if d, err = rollback(t); err != nil {
			return err
		}
		r.add(suiteTurns, wRollback10k, tCowfs, run, d.Seconds(), "s")
		// The next turn makes that rollback final.
		start := time.Now()
		if _, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{}); err != nil {
			return err
		}
		if _, err := cl.EndTurn(ctx); err != nil {
			return err
		}
		r.add(suiteTurns, wAfter10k, tCowfs, run, time.Since(start).Seconds(), "s")
	}
	return nil
}
