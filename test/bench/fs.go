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
// machine's drift affects all targets alike.
func fsSuite(c *config, r *results) error {
	ts := targets(c)
	for run := 1; run <= c.runs; run++ {
		for _, t := range ts {
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
			if err != nil {
				return fmt.Errorf("%s: %w", t.name(), err)
			}
		}
	}
	return nil
}

func fsWorkloads(c *config, r *results, t target, dir string, run int) error {
	add := func(w string, d time.Duration) { r.add(suiteFS, w, t.name(), run, d.Seconds(), "s") }
	big := filepath.Join(dir, "big")
	write, read := fmt.Sprintf(wWrite, c.fileMiB), fmt.Sprintf(wRead, c.fileMiB)
	d, err := timed(dir, "dd", "if=/dev/zero", "of="+big, "bs=1M", fmt.Sprintf("count=%d", c.fileMiB))
	if err != nil {
		return err
	}
	add(write, d)
	if _, err := timed(dir, "cat", big); err != nil { // fill the cache
		return err
	}
	if d, err = timed(dir, "cat", big); err != nil {
		return err
	}
	add(read, d)
	os.Remove(big)

	if d, err = timed(dir, "tar", "-xf", c.tarball); err != nil {
		return err
	}
	add(wUntar, d)
	if pid := t.daemon(); pid != 0 {
		r.add(suiteFS, wRSS, t.name(), run, float64(peakRSS(pid))/(1<<20), "MiB")
	}
	dropCaches()
	if d, err = timed(dir, "grep", "-r", "-q", "cowfs-no-such-string"); err != nil {
		return err
	}
	add(wGrepCold, d)
	if d, err = timed(dir, "grep", "-r", "-q", "cowfs-no-such-string"); err != nil {
		return err
	}
	add(wGrepWarm, d)
	// The warm run reads nothing, but a FUSE kernel asks for the
	// attributes of each file once more (reading from the daemon marked
	// atime stale); from the third run on it asks nothing.
	if d, err = timed(dir, "grep", "-r", "-q", "cowfs-no-such-string"); err != nil {
		return err
	}
	add(wGrepHot, d)
	git := "git init -q && git add -A && git -c user.name=bench -c user.email=bench@localhost commit -qm bench"
	if d, err = timed(filepath.Join(dir, "src"), "sh", "-c", git); err != nil {
		return err
	}
	add(wGit, d)
	if d, err = timed(dir, "rm", "-rf", "src"); err != nil {
		return err
	}
	add(wRmRf, d)
	return nil
}

// timed runs a command in dir and returns how long it took. grep's
// exit code 1 (no match) is success.
func timed(dir, name string, args ...string) (time.Duration, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
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
