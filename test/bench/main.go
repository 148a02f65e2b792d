// Command bench measures cowfs against native, bare go-fuse loopback,
// fuse-overlayfs and git shadow snapshots, side by side in one run:
//
//	go run ./test/bench            # full: Go's src, a 1 GiB file, 5 runs
//	go run ./test/bench -quick     # src/crypto, 256 MiB
//	go run ./test/bench -only storage   # the journal: bytes and time per turn
//	go run ./test/bench -only memory    # the daemon's peak RSS per workload
//	go run ./test/bench -only stack     # undo after undo, and a walk back through the window
//	go run ./test/bench -only realturns # rollbacks of untar+git, npm ci, go build turns
//	go run ./test/bench -only boundaries # turn begin and end at 0 / 10k / 100k paths in the window (part of turns)
//
// It prepares its own data (a tarball of $(go env GOROOT)/src), runs each
// workload on each target in turn, run after run, prints medians and
// ratios to native, and writes every measurement to a JSON file. For the
// FUSE daemons it also prints the CPU time each workload cost them, and
// for cowfs the FUSE requests it served (counted by the daemon), so a
// change that adds round trips shows up. It needs
// root and /dev/fuse; fuse-overlayfs is measured if it is installed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type config struct {
	quick    bool
	runs     int
	out      string
	work     string
	only     string
	targets  string // fs suite: the targets to run (names, comma-separated)
	scenario string // memory scenarios to run: those whose name contains it
	profile  string // directory for cowfs CPU profiles
	cowfs    string // built binary
	base     string // -base: a commit to compare with
	baseBin  string // cowfs built from it
	loopback string // built go-fuse example
	tarball  string
	fileMiB  int
	sizes    []int     // workspace sizes for turn checkpoints
	agent    agentWork // agent.go
}

func main() {
	var c config
	flag.BoolVar(&c.quick, "quick", false, "smaller data and fewer workspaces (src/crypto, a 256 MiB file)")
	flag.IntVar(&c.runs, "runs", 5, "runs of each workload on each target (medians are taken over them)")
	flag.StringVar(&c.out, "json", "bench-results.json", "write every measurement to `FILE`")
	flag.StringVar(&c.work, "work", "", "work in `DIR` (default: a new directory under /var/tmp)")
	flag.StringVar(&c.only, "only", "", "run only the suites named (comma-separated: fs, turns, boundaries, stack, realturns, storage, memory; turns includes boundaries)")
	flag.StringVar(&c.targets, "targets", "", "fs suite: run only the targets named (comma-separated: native, go-fuse loopback, fuse-overlayfs, cowfs, cowfs scoped, cowfs passthrough, cowfs 1P, cowfs base)")
	flag.StringVar(&c.base, "base", "", "also measure cowfs built from the commit `REV` as the target \"cowfs base\", alternating with the others (an A/B of a change)")
	flag.StringVar(&c.scenario, "scenario", "", "run only the memory scenarios whose name contains `TEXT` (e.g. \"event turn\")")
	flag.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of each cowfs daemon of the fs suite into `DIR` (for go tool pprof)")
	flag.Parse()
	if err := run(&c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(c *config) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (to mount and to drop caches)")
	}
	if c.work == "" {
		dir, err := os.MkdirTemp("/var/tmp", "cowfs-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.work = dir
	}
	c.fileMiB, c.sizes = 1024, []int{1000, 10000, 100000}
	if c.quick {
		c.fileMiB, c.sizes = 256, []int{1000, 10000}
	}
	if err := prepare(c); err != nil {
		return err
	}
	r := &results{Machine: machine() + ", " + workFS(c.work), Quick: c.quick, Runs: c.runs, Started: time.Now().UTC()}
	if c.wants("fs") {
		if err := fsSuite(c, r); err != nil {
			return err
		}
	}
	if c.wants("turns") {
		if err := turnSuite(c, r); err != nil {
			return err
		}
	} else if c.wants("boundaries") {
		if err := boundaryRows(c, r); err != nil {
			return err
		}
	}
	if c.wants("stack") {
		if err := stackSuite(c, r); err != nil {
			return err
		}
	}
	if c.wants("realturns") {
		if err := realTurns(c, r); err != nil {
			return err
		}
	}
	if c.wants("storage") {
		if err := storageSuite(c, r); err != nil {
			return err
		}
	}
	if c.wants("memory") {
		if err := memorySuite(c, r); err != nil {
			return err
		}
	}
	r.print(os.Stdout)
	r.printCurve(os.Stdout)
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(c.out, b, 0o644); err != nil {
		return err
	}
	fmt.Printf("\nevery measurement: %s\n", c.out)
	return nil
}

// prepare builds cowfs and go-fuse's example loopback, and the tarball.
func prepare(c *config) error {
	bin := filepath.Join(c.work, "bin")
	os.MkdirAll(bin, 0o755)
	c.cowfs, c.loopback = filepath.Join(bin, "cowfs"), filepath.Join(bin, "loopback")
	for out, pkg := range map[string]string{c.cowfs: "github.com/cowfs/cowfs/cmd/cowfs", c.loopback: "github.com/cowfs/cowfs/internal/_gofuse/example/loopback"} {
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v: %s", pkg, err, b)
		}
	}
	if c.base != "" {
		if err := buildBase(c, bin); err != nil {
			return err
		}
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return err
	}
	c.tarball = filepath.Join(c.work, "src.tar")
	args := []string{"-C", strings.TrimSpace(string(goroot)), "-cf", c.tarball}
	if c.quick {
		args = append(args, "src/crypto") // 1,168 files
	} else {
		args = append(args, "src")
	}
	if b, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, b)
	}
	if c.wants("fs") || c.wants("realturns") {
		prepareAgent(c)
	}
	return nil
}

// buildBase builds cowfs from the commit c.base names, from a copy of
// its tree (git archive), into bin.
func buildBase(c *config, bin string) error {
	src := filepath.Join(c.work, "base-src")
	os.MkdirAll(src, 0o755)
	archive := exec.Command("sh", "-c", `git archive "$1" | tar -x -C "$2"`, "sh", c.base, src)
	if b, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("-base %s: %v: %s", c.base, err, b)
	}
	c.baseBin = filepath.Join(bin, "cowfs-base")
	build := exec.Command("go", "build", "-o", c.baseBin, "./cmd/cowfs")
	build.Dir = src
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("-base %s: build: %v: %s", c.base, err, b)
	}
	return nil
}

// wants says whether suite is to run: -only names it, or is not given.
func (c *config) wants(suite string) bool {
	if c.only == "" {
		return true
	}
	for _, s := range strings.Split(c.only, ",") {
		if strings.TrimSpace(s) == suite {
			return true
		}
	}
	return false
}

func machine() string {
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d CPUs, Linux %s, %s", runtime.NumCPU(), strings.TrimSpace(string(kernel)), runtime.Version())
}
