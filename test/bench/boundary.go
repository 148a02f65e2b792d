package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// Workloads of the boundary rows (turns suite).
const (
	wBoundaryBegin = "turn begin, %dk paths in the window"
	wBoundaryEnd   = "turn end, %dk paths in the window"
	tStatScan      = "cowfs --no-fanotify"
)

// boundaryPaths are the window's sizes the boundary rows are measured
// at, in -quick too: what a turn boundary costs must not follow them.
var boundaryPaths = []int{0, 10000, 100000}

// boundaryRows measures an empty turn's begin and end, each over the
// control socket as a harness calls them, once a turn in the window
// created n files (100 to a directory): with cowfs watching the backing
// directory (fanotify), and with every tracked path stat'ed at each
// boundary (--no-fanotify), the two daemons' runs alternating.
func boundaryRows(c *config, r *results) error {
	for _, n := range boundaryPaths {
		fmt.Printf("turns: boundaries with %d paths in the window\n", n)
		if err := boundaries(c, r, n); err != nil {
			return err
		}
	}
	return nil
}

func boundaries(c *config, r *results, n int) error {
	base := filepath.Join(c.work, fmt.Sprintf("boundary-%d", n))
	defer os.RemoveAll(base)
	targets := []string{tCowfs, tStatScan}
	clients := map[string]*ctl.Client{}
	ctx := context.Background()
	for _, target := range targets {
		dir := filepath.Join(base, map[string]string{tCowfs: "watched", tStatScan: "stat"}[target])
		ws := filepath.Join(dir, "ws")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return err
		}
		var flags []string
		if target == tStatScan {
			flags = append(flags, "--no-fanotify")
		}
		cw, cl, err := mountAt(c, dir, ws, flags...)
		if err != nil {
			return err
		}
		defer cw.teardown()
		clients[target] = cl
		if _, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{}); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			dir := filepath.Join(cw.mnt, fmt.Sprintf("d%03d/e%02d", i/10000, (i/100)%100))
			if i%100 == 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d", i)), nil, 0o644); err != nil {
				return err
			}
		}
		if _, err := cl.EndTurn(ctx); err != nil {
			return err
		}
	}
	// One empty turn first: the scans after it are the steady state.
	for run := 0; run <= c.runs; run++ {
		for _, target := range targets {
			cl := clients[target]
			start := time.Now()
			if _, err := cl.BeginTurn(ctx, ctl.BeginTurnRequest{}); err != nil {
				return err
			}
			begin := time.Since(start)
			start = time.Now()
			if _, err := cl.EndTurn(ctx); err != nil {
				return err
			}
			end := time.Since(start)
			if run > 0 {
				r.add(suiteTurns, fmt.Sprintf(wBoundaryBegin, n/1000), target, run, begin.Seconds(), "s")
				r.add(suiteTurns, fmt.Sprintf(wBoundaryEnd, n/1000), target, run, end.Seconds(), "s")
			}
		}
	}
	return nil
}
