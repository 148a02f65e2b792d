package e2e

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"
)

var crashRuns = flag.Int("crash-runs", 8, "crash points TestCrashAnywhere tries (CI: the default; a soak: hundreds)")

// The crash harness: kill -9 the daemon at random points — during a
// turn's workload, during a rollback, during an unrevert, while turns
// leave the window — restart it, and check that the workspace then
// rolls back (or was finished) exactly. The points come from a fixed
// seed (-seed N or -random for others); the log says how many were
// exact.
func TestCrashAnywhere(t *testing.T) {
	seed := uint64(42)
	switch {
	case *modelSeed != 0:
		seed = *modelSeed
	case *random:
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, 0xc4a5))
	kinds := []string{"workload", "rollback", "unrevert", "prune"}
	exact := 0
	for i := 0; i < *crashRuns; i++ {
		kind := kinds[i%len(kinds)]
		c := crash{rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))}
		if t.Run(fmt.Sprintf("%d-%s", i, kind), func(t *testing.T) { c.run(t, kind) }) {
			exact++
		}
	}
	t.Logf("seed %d: %d/%d crash points exact", seed, exact, *crashRuns)
}

type crash struct{ rng *rand.Rand }

// workload is a turn's worth of shell changes: writes, appends,
// truncations, renames, deletions, directories, links.
func (c crash) workload() string {
	var b strings.Builder
	for i := 0; i < 60; i++ {
		f := fmt.Sprintf("d%d/f%d", c.rng.IntN(4), c.rng.IntN(12))
		g := fmt.Sprintf("d%d/f%d", c.rng.IntN(4), c.rng.IntN(12))
		switch c.rng.IntN(8) {
		case 0:
			fmt.Fprintf(&b, "head -c %d /dev/urandom > %s\n", c.rng.IntN(200000), f)
		case 1:
			fmt.Fprintf(&b, "echo more%d >> %s\n", i, f)
		case 2:
			fmt.Fprintf(&b, "truncate -s %d %s\n", c.rng.IntN(5000), f)
		case 3:
			fmt.Fprintf(&b, "mv %s %s\n", f, g)
		case 4:
			fmt.Fprintf(&b, "rm -f %s\n", f)
		case 5:
			fmt.Fprintf(&b, "mkdir -p d%d/sub%d && echo x > d%d/sub%d/n%d\n", c.rng.IntN(4), i, c.rng.IntN(4), i, i)
		case 6:
			fmt.Fprintf(&b, "ln -f %s d%d/l%d\n", f, c.rng.IntN(4), i)
		case 7:
			fmt.Fprintf(&b, "rm -rf d%d/sub*\n", c.rng.IntN(4))
		}
	}
	return b.String()
}

func (c crash) seed(w *workspace) {
	files := map[string]string{}
	for d := 0; d < 4; d++ {
		for f := 0; f < 12; f += 2 {
			files[fmt.Sprintf("d%d/f%d", d, f)] = strings.Repeat(fmt.Sprintf("%d.%d\n", d, f), 1+c.rng.IntN(3000))
		}
	}
	w.seed(files)
}

// shellIn runs script in the mounted workspace, ignoring failures (a
// command of a random workload may fail, as an agent's do).
func shellIn(w *workspace, script string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = w.mnt
	return cmd
}

// restart mounts again over the dead daemon's mount.
func restart(w *workspace, flags ...string) {
	w.t.Helper()
	w.daemonEnv = nil
	w.mount(flags...)
}

func (c crash) run(t *testing.T, kind string) {
	w := newWorkspace(t)
	c.seed(w)
	window := []string{"--window", "10"}
	if kind == "prune" {
		window = []string{"--window", "1"}
	}
	w.mount(window...)
	before := snapshot(t, w.mnt)
	w.cowfs("turn", "begin")

	if kind == "workload" {
		// Kill while the turn's workload runs.
		sh := shellIn(w, c.workload())
		if err := sh.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(c.rng.IntN(150)) * time.Millisecond)
		w.killDaemon(w.status().Pid)
		sh.Process.Kill()
		sh.Wait()
		restart(w, window...)
		w.run("turn", "end")
		w.rollback("1", "--force")
		sameTree(t, w.mnt, before, "rolled back after a crash during the turn")
		return
	}
	shellIn(w, c.workload()).Run()
	w.cowfs("turn", "end")
	after := snapshot(t, w.mnt)

	switch kind {
	case "rollback", "unrevert":
		if kind == "unrevert" {
			w.rollback("1")
		}
		// Restart with a pause at a random step, and kill there (or
		// after the end, if the operation has fewer steps).
		pid := w.status().Pid
		w.cowfs("umount")
		w.pids = nil
		step := 1 + c.rng.IntN(60)
		pause := w.pauseAt(step)
		w.mount(window...)
		pid = w.status().Pid
		args := []string{"-w", w.mnt, "rollback", "1"}
		if kind == "unrevert" {
			args = []string{"-w", w.mnt, "unrevert"}
		}
		op := exec.Command(cowfsBin, args...)
		op.Env = w.env()
		if err := op.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { op.Wait(); close(done) }()
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-time.After(10 * time.Millisecond):
				if pause.reached() {
					break wait
				}
			}
		}
		w.killDaemon(pid)
		<-done
		restart(w, window...)
		want, what := before, "after a rollback killed at step "+fmt.Sprint(step)
		if kind == "unrevert" {
			want, what = after, "after an unrevert killed at step "+fmt.Sprint(step)
		}
		sameTree(t, w.mnt, want, what)
	case "prune":
		// Turn 2 begins, pushing turn 1 out of the window: kill while
		// the prune (and its reclaim) may be running.
		mid := snapshot(t, w.mnt)
		w.cowfs("turn", "begin")
		time.Sleep(time.Duration(c.rng.IntN(40)) * time.Millisecond)
		w.killDaemon(w.status().Pid)
		restart(w, window...)
		// Turn 2 is still open: its changes go on after the restart.
		shellIn(w, "echo changed > d0/f0; rm -f d1/f2").Run()
		w.cowfs("turn", "end")
		w.rollback("2")
		sameTree(t, w.mnt, mid, "rolled back turn 2 after a crash while turn 1 left the window")
	}
}
