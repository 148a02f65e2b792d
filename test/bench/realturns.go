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

// Rollbacks of the turns agents really make (-only realturns). A tree
// created in one turn is undone by one rename of its top directory
// when nothing else the plan does touches it (package rollback,
// trees.go); real tools link, unlink and rename inside the trees they
// make (git's objects and index, npm's staging, go's cache entries),
// and each path the fold misses is a step of its own. Each workload
// runs in a turn of its own on a fresh cowfs mount and is rolled back;
// the suite reports the rollback's time as the client sees it, the
// paths it reported, and the time per 10,000 paths (the target is 1 s).
const (
	wRealGit     = "rollback: untar + git init/add/commit turn"
	wRealNpm     = "rollback: npm ci turn"
	wRealGoBuild = "rollback: go build turn"
	wPer10k      = "%s, per 10k paths"
	wPaths       = "%s, paths"
)

// realTurns measures the rollback of each real turn, c.runs times.
func realTurns(c *config, r *results) error {
	type work struct {
		name string
		run  func(mnt string) error
	}
	works := []work{{wRealGit, func(mnt string) error {
		if b, err := exec.Command("tar", "-C", mnt, "-xf", c.tarball).CombinedOutput(); err != nil {
			return fmt.Errorf("tar: %v: %s", err, b)
		}
		git := "git init -q && git add -A && git -c gc.auto=0 -c maintenance.auto=false -c user.name=bench -c user.email=bench@localhost commit -qm bench"
		_, err := timed(filepath.Join(mnt, "src"), "sh", "-c", git)
		return err
	}}}
	if c.agent.npmProject != "" {
		works = append(works, work{wRealNpm, func(mnt string) error {
			return npmCI(c, filepath.Join(mnt, "npm"), untimed)
		}})
	}
	if c.agent.goTree != "" {
		works = append(works, work{wRealGoBuild, func(mnt string) error {
			return goBuild(c, filepath.Join(mnt, "gobuild"), untimed)
		}})
	}
	for _, w := range works {
		fmt.Printf("turns: %s\n", w.name)
		for run := 1; run <= c.runs; run++ {
			if err := realTurn(c, r, w.name, run, w.run); err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
		}
	}
	return nil
}

// realTurn mounts cowfs over an empty workspace, runs work in a turn
// and rolls it back.
func realTurn(c *config, r *results, name string, run int, work func(mnt string) error) error {
	base := filepath.Join(c.work, "real-turn")
	os.RemoveAll(base)
	defer os.RemoveAll(base)
	ws := filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	cw, cl, err := mountAt(c, base, ws)
	if err != nil {
		return err
	}
	defer cw.teardown()
	ctx := context.Background()
	t, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{})
	if err != nil {
		return err
	}
	if err := work(cw.mnt); err != nil {
		return err
	}
	if _, err := cl.EndTurn(ctx); err != nil {
		return err
	}
	start := time.Now()
	res, err := cl.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(fmt.Sprint(t.Num))})
	d := time.Since(start)
	if err != nil {
		return err
	}
	if res.Counts.Skipped != 0 || !res.Complete {
		return fmt.Errorf("rollback skipped %d paths (complete %v)", res.Counts.Skipped, res.Complete)
	}
	paths := len(res.Paths)
	r.add(suiteTurns, name, tCowfs, run, d.Seconds(), "s")
	r.add(suiteTurns, fmt.Sprintf(wPaths, name), tCowfs, run, float64(paths), "paths")
	if paths > 0 {
		r.add(suiteTurns, fmt.Sprintf(wPer10k, name), tCowfs, run, d.Seconds()*10000/float64(paths), "s")
	}
	return nil
}
