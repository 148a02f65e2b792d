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

// Stacked rollbacks (in the turn suite): a harness's undo button pressed
// again and again, each press a rollback to before the latest turn not
// yet reverted. Each press restores about as much as the first, and
// must cost about what the first did: time, and what it adds to the
// journal.
const (
	wUndoFirst  = "undo 1 of 10 in a row (50 files, sed -i each turn)"
	wUndoTenth  = "undo 10 of 10 in a row (50 files, sed -i each turn)"
	wUndoGrowth = "journal growth of undo %d of 10 in a row"
	wWalkFirst  = "walk back, step 1 of 10 (a 40-turn session)"
	wWalkTenth  = "walk back, step 10 of 10 (a 40-turn session)"
)

// stackFiles is how many files each turn of the stacked cases edits.
const stackFiles = 50

// stackSuite measures ten undos in a row after ten turns of sed -i over
// the same files, and a walk back through the window of a 40-turn
// session of mixed work.
func stackSuite(c *config, r *results) error {
	for run := 1; run <= c.runs; run++ {
		fmt.Printf("turns: ten undos in a row, run %d\n", run)
		if err := undosInARow(c, r, run); err != nil {
			return fmt.Errorf("undos in a row: %w", err)
		}
		fmt.Printf("turns: a walk back through a 40-turn session, run %d\n", run)
		if err := walkBack(c, r, run); err != nil {
			return fmt.Errorf("walk back: %w", err)
		}
	}
	return nil
}

// stackWorkspace is a workspace of stackFiles files, mounted.
func stackWorkspace(c *config, name string) (*cowfs, *ctl.Client, string, error) {
	base := filepath.Join(c.work, name)
	os.RemoveAll(base)
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, nil, "", err
	}
	for i := 0; i < stackFiles; i++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
			return nil, nil, "", err
		}
	}
	cw, cl, err := mountAt(c, base, ws)
	return cw, cl, base, err
}

// sedTurn runs one turn in which sed -i rewrites every file, as an
// agent's edit tool or a formatter does: a new file renamed over each.
func sedTurn(cl *ctl.Client, mnt string, k int) (ctl.Turn, error) {
	ctx := context.Background()
	t, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{})
	if err != nil {
		return t, err
	}
	sed := exec.Command("sh", "-c", fmt.Sprintf("sed -i 's/beta.*/beta %d/' f*.txt", k))
	sed.Dir = mnt
	if out, err := sed.CombinedOutput(); err != nil {
		return t, fmt.Errorf("sed: %v: %s", err, out)
	}
	_, err = cl.EndTurn(ctx)
	return t, err
}

// undoBack rolls back to before each of turns, newest first, and
// returns what each took and added to the journal.
func undoBack(cl *ctl.Client, turns []ctl.Turn) (took []time.Duration, grew []int64, err error) {
	ctx := context.Background()
	for i := len(turns) - 1; i >= 0; i-- {
		before, err := cl.Status(ctx)
		if err != nil {
			return nil, nil, err
		}
		start := time.Now()
		res, err := cl.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(fmt.Sprint(turns[i].Num))})
		if err != nil {
			return nil, nil, err
		}
		took = append(took, time.Since(start))
		if res.Counts.Skipped != 0 || !res.Complete {
			return nil, nil, fmt.Errorf("undo to before turn %d skipped %d paths (complete: %v)", turns[i].Num, res.Counts.Skipped, res.Complete)
		}
		after, err := cl.Status(ctx)
		if err != nil {
			return nil, nil, err
		}
		grew = append(grew, after.JournalBytes-before.JournalBytes)
	}
	return took, grew, nil
}

func undosInARow(c *config, r *results, run int) error {
	cw, cl, base, err := stackWorkspace(c, "undos")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	defer cw.teardown()
	var turns []ctl.Turn
	for k := 0; k < 10; k++ {
		t, err := sedTurn(cl, cw.mnt, k)
		if err != nil {
			return err
		}
		turns = append(turns, t)
	}
	took, grew, err := undoBack(cl, turns)
	if err != nil {
		return err
	}
	r.add(suiteTurns, wUndoFirst, tCowfs, run, took[0].Seconds(), "s")
	r.add(suiteTurns, wUndoTenth, tCowfs, run, took[9].Seconds(), "s")
	r.add(suiteTurns, fmt.Sprintf(wUndoGrowth, 1), tCowfs, run, float64(grew[0])/1024, "KiB")
	r.add(suiteTurns, fmt.Sprintf(wUndoGrowth, 10), tCowfs, run, float64(grew[9])/1024, "KiB")
	return nil
}

// walkBack runs a session of 40 turns of sed -i over the files, with a
// turn that makes and removes a build directory and appends to notes
// after every third, and then steps back one turn at a time through the
// window.
func walkBack(c *config, r *results, run int) error {
	cw, cl, base, err := stackWorkspace(c, "walk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	defer cw.teardown()
	var turns []ctl.Turn
	for k := 0; k < 40; k++ {
		t, err := sedTurn(cl, cw.mnt, k)
		if err != nil {
			return err
		}
		turns = append(turns, t)
		if k%3 == 0 {
			extra := exec.Command("sh", "-c", fmt.Sprintf("mkdir -p build && echo %d > build/out.%d && echo %d >> notes.md && rm -rf build", k, k, k))
			extra.Dir = cw.mnt
			ctx := context.Background()
			if _, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{}); err != nil {
				return err
			}
			if out, err := extra.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			t, err = cl.EndTurn(ctx)
			if err != nil {
				return err
			}
			turns = append(turns, t)
		}
	}
	window, err := cl.Turns(context.Background())
	if err != nil {
		return err
	}
	live := turns[len(turns)-len(window.Turns):]
	took, _, err := undoBack(cl, live)
	if err != nil {
		return err
	}
	r.add(suiteTurns, wWalkFirst, tCowfs, run, took[0].Seconds(), "s")
	r.add(suiteTurns, wWalkTenth, tCowfs, run, took[len(took)-1].Seconds(), "s")
	return nil
}
