package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Workloads of the filesystem suite, in the order they run.
const (
	wWrite     = "write %d MiB"
	wNewFile   = "new 1 GiB file (dd conv=fsync)"
	wRead      = "cached read %d MiB"
	wUntar     = "untar"
	wGrepCold  = "grep -r, cold"
	wGrepWarm  = "grep -r, warm"
	wGrepHot   = "grep -r, again"
	wGit       = "git init+add+commit"
	wRmRf      = "rm -rf"
	wRSS       = "daemon peak RSS"
	suiteFS    = "fs"
	suiteTurns = "turns"
)

// fsSuite runs every workload on every target, run after run, so the
// machine's drift affects all targets alike. A target inherits the
// leftovers of the one before it — what that one wrote and removed, still
// being written back, and on ext4 without a journal the inodes it freed,
// which the allocator steps over for a minute, five while unwritten
// (workfs.go) — which slowed an untar right after native's run in every
// run (performance.md, History, 2026-12-07). So each target's tree is
// synced away before the next starts, and each run starts one target
// later than the run before, so no target always follows the same one.
func fsSuite(c *config, r *results) error {
	ts := targets(c)
	for run := 1; run <= c.runs; run++ {
		for i := range ts {
			t := ts[(i+run-1)%len(ts)]
			fmt.Printf("run %d/%d: %s\n", run, c.runs, t.name())
			base := filepath.Join(c.work, fmt.Sprintf("run%d-%s", run, strings.ReplaceAll(t.name(), " ", "-")))
			dir, err := t.setup(base)
			if err == nil {
				err = fsWorkloads(c, r, t, dir, run)
			}
			if terr := t.teardown(); err == nil {
				err = terr
			}
			os.RemoveAll(base)
			exec.Command("sync").Run()
			if err != nil {
				return fmt.Errorf("%s: %w", t.name(), err)
			}
		}
	}
	return nil
}

func fsWorkloads(c *config, r *results, t target, dir string, run int) error {
	// step times one workload, and counts the daemon's CPU time and
	// FUSE requests it cost.
	stepEnv := func(w, dir string, env []string, name string, args ...string) error {
		before := sample(t, true)
		d, err := timedEnv(dir, env, name, args...)
		if err != nil {
			return err
		}
		r.add(suiteFS, w, t.name(), run, d.Seconds(), "s")
		sample(t, false).since(before, r, w, t.name(), run)
		return nil
	}
	step := func(w, dir, name string, args ...string) error { return stepEnv(w, dir, nil, name, args...) }
	big := filepath.Join(dir, "big")
	if err := step(fmt.Sprintf(wWrite, c.fileMiB), dir, "dd", "if=/dev/zero", "of="+big, "bs=1M", fmt.Sprintf("count=%d", c.fileMiB)); err != nil {
		return err
	}
	if _, err := timed(dir, "cat", big); err != nil { // fill the cache
		return err
	}
	if err := step(fmt.Sprintf(wRead, c.fileMiB), dir, "cat", big); err != nil {
		return err
	}
	os.Remove(big)
	// A file the turn creates, synced: what passthrough is for.
	if err := step(wNewFile, dir, "dd", "if=/dev/zero", "of="+big, "bs=1M", "count=1024", "conv=fsync"); err != nil {
		return err
	}
	os.Remove(big)

	if err := step(wUntar, dir, "tar", "-xf", c.tarball); err != nil {
		return err
	}
	if pid := t.daemon(); pid != 0 {
		r.add(suiteFS, wRSS, t.name(), run, float64(peakRSS(pid))/(1<<20), "MiB")
	}
	dropCaches()
	grep := []string{"-r", "-q", "cowfs-no-such-string"}
	if err := step(wGrepCold, dir, "grep", grep...); err != nil {
		return err
	}
	if err := step(wGrepWarm, dir, "grep", grep...); err != nil {
		return err
	}
	// The warm run reads nothing, but a FUSE kernel asks for the
	// attributes of each file once more (reading from the daemon marked
	// atime stale); from the third run on it asks nothing.
	if err := step(wGrepHot, dir, "grep", grep...); err != nil {
		return err
	}
	// No automatic gc: after a commit of Go's src it would repack in the
	// background, while rm -rf runs ("Directory not empty") and the
	// next workloads are measured.
	git := "git init -q && git add -A && git -c gc.auto=0 -c maintenance.auto=false -c user.name=bench -c user.email=bench@localhost commit -qm bench"
	if err := step(wGit, filepath.Join(dir, "src"), "sh", "-c", git); err != nil {
		return err
	}
	if err := step(wRmRf, dir, "rm", "-rf", "src"); err != nil {
		return err
	}
	return agentWorkloads(c, t, dir, stepEnv)
}

// timed runs a command in dir and returns how long it took. grep's
// exit code 1 (no match) is success.
func timed(dir, name string, args ...string) (time.Duration, error) {
	return timedEnv(dir, nil, name, args...)
}

// timedEnv is timed with env added to the environment.
func timedEnv(dir string, env []string, name string, args ...string) (time.Duration, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = nil, &stderr
	if name == "cat" {
		devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		defer devnull.Close()
		cmd.Stdout = devnull
	}
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok && name == "grep" && ee.ExitCode() == 1 {
		err = nil
	}
	if err != nil {
		return d, fmt.Errorf("%s %v: %v: %s", name, args, err, stderr.String())
	}
	return d, nil
}

// dropCaches empties the page, dentry and inode caches: "cold".
func dropCaches() {
	exec.Command("sync").Run()
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200)
}
