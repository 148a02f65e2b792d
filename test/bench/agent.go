package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The agent workloads of the filesystem suite: what agents run all day,
// beside the synthetic ones.
//
//   - npm ci of a small real dependency tree (express, ~70 packages),
//     from an npm cache warmed once before the runs (outside the
//     targets), as an agent reinstalling a project's dependencies does;
//   - go build of a mid-size module — cowfs itself, its dependencies
//     vendored — with GOCACHE on the mount, holding the standard
//     library already compiled (as a container whose image built it),
//     so the build compiles the module and its dependencies into it
//     (15 s natively on 2 cores, in -quick runs too);
//   - 100,000 tiny files created by Python, 1,000 to a directory, as a
//     package manager or a code generator makes them: what a turn's
//     creation of many small files costs per file.
//
// Each is skipped, with a message, where its tool is missing or its
// preparation fails (no registry).
const (
	wNpm       = "npm ci (express, warm cache)"
	wGoBuild   = "go build (cowfs, GOCACHE on the mount)"
	wRandWrite = "random 4 KiB writes (fio psync, verified)"
	wTiny      = "100,000 tiny files (Python)"
)

// agentWork is what prepareAgent made.
type agentWork struct {
	npmProject string // package.json and package-lock.json
	npmCache   string
	goTree     string // tarball of the module, vendored
	goCache    string // tarball of a GOCACHE holding std
	noFio      bool   // said fio is missing
	noPython   bool   // said python3 is missing
}

// prepareAgent readies the agent workloads, natively.
func prepareAgent(c *config) {
	if _, err := exec.LookPath("npm"); err != nil {
		fmt.Println("npm is not installed: npm ci not measured")
	} else if err := prepareNpm(c); err != nil {
		fmt.Printf("npm ci not measured: %v\n", err)
		c.agent.npmProject = ""
	}
	if err := prepareGo(c); err != nil {
		fmt.Printf("go build not measured: %v\n", err)
		c.agent.goTree = ""
	}
}

func prepareNpm(c *config) error {
	a := &c.agent
	a.npmProject, a.npmCache = filepath.Join(c.work, "npm-project"), filepath.Join(c.work, "npm-cache")
	os.MkdirAll(a.npmProject, 0o755)
	pkg := `{"name": "bench", "version": "1.0.0", "private": true, "dependencies": {"express": "4.21.2"}}` + "\n"
	if err := os.WriteFile(filepath.Join(a.npmProject, "package.json"), []byte(pkg), 0o644); err != nil {
		return err
	}
	// install makes the lockfile; ci then caches what ci itself asks
	// for (the metadata it wants differs), so the timed runs find all
	// of it in the cache.
	for _, args := range [][]string{{"install"}, {"ci", "--prefer-offline"}} {
		cmd := exec.Command("npm", append(args, "--no-audit", "--no-fund", "--cache", a.npmCache)...)
		cmd.Dir = a.npmProject
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm %s: %v: %s", args[0], err, b)
		}
	}
	return os.RemoveAll(filepath.Join(a.npmProject, "node_modules"))
}

func prepareGo(c *config) error {
	a := &c.agent
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(mod)) == "" {
		return fmt.Errorf("not in a module: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(mod)))
	tree := filepath.Join(c.work, "go-tree")
	os.MkdirAll(tree, 0o755)
	// The committed sources, then their dependencies vendored.
	archive := exec.Command("sh", "-c", `git -C "$1" archive HEAD | tar -x -C "$2"`, "sh", root, tree)
	if b, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("copy the module: %v: %s", err, b)
	}
	vendor := exec.Command("go", "mod", "vendor")
	vendor.Dir = tree
	if b, err := vendor.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod vendor: %v: %s", err, b)
	}
	cache := filepath.Join(c.work, "go-cache")
	std := exec.Command("go", "build", "std")
	std.Env = append(os.Environ(), "GOCACHE="+cache)
	if b, err := std.CombinedOutput(); err != nil {
		return fmt.Errorf("go build std: %v: %s", err, b)
	}
	a.goTree, a.goCache = filepath.Join(c.work, "go-tree.tar"), filepath.Join(c.work, "go-cache.tar")
	for tarball, dir := range map[string]string{a.goTree: tree, a.goCache: cache} {
		if b, err := exec.Command("tar", "-C", dir, "-cf", tarball, ".").CombinedOutput(); err != nil {
			return fmt.Errorf("tar %s: %v: %s", dir, err, b)
		}
		os.RemoveAll(dir)
	}
	return nil
}

// agentWorkloads runs the agent workloads in dir on target t, timing
// each with step (fsWorkloads); what they need is put in place first,
// untimed.
func agentWorkloads(c *config, t target, dir string, step func(w, dir string, env []string, name string, args ...string) error) error {
	a := &c.agent
	if _, err := exec.LookPath("fio"); err == nil {
		// What a database or a build cache does: random 4 KiB writes
		// into a file that existed before the turn (each new range is
		// a pre-image to capture), read back and checked by fio.
		f := filepath.Join(dir, "db.bin")
		if err := writeFile(f, c.fileMiB<<19); err != nil { // half the large file
			return err
		}
		if err := t.newEpoch(); err != nil {
			return err
		}
		size := fmt.Sprintf("%dM", c.fileMiB/2)
		if err := step(wRandWrite, dir, nil, "fio", "--name=rw", "--filename="+f, "--rw=randwrite", "--bs=4k",
			"--size="+size, "--io_size="+fmt.Sprintf("%dM", c.fileMiB/8), "--ioengine=psync", "--randrepeat=1",
			"--norandommap", "--verify=crc32c", "--verify_fatal=1", "--verify_state_save=0", "--output=/dev/null"); err != nil {
			return err
		}
		os.Remove(f)
	} else if c.agent.noFio == false {
		c.agent.noFio = true
		fmt.Println("fio is not installed: random writes not measured")
	}
	if a.npmProject != "" {
		if err := npmCI(c, filepath.Join(dir, "npm"), func(dir string, env []string, name string, args ...string) error {
			return step(wNpm, dir, env, name, args...)
		}); err != nil {
			return err
		}
	}
	if a.goTree != "" {
		if err := goBuild(c, filepath.Join(dir, "gobuild"), func(dir string, env []string, name string, args ...string) error {
			return step(wGoBuild, dir, env, name, args...)
		}); err != nil {
			return err
		}
	}
	// Last: the files stay, and would make the workloads after them
	// run in a fuller workspace on some targets than on others.
	if _, err := exec.LookPath("python3"); err == nil {
		tiny := filepath.Join(dir, "tiny")
		if err := os.MkdirAll(tiny, 0o755); err != nil {
			return err
		}
		if err := step(wTiny, tiny, nil, "python3", "-c", tinyFiles, "100", "1000"); err != nil {
			return err
		}
	} else if !a.noPython {
		a.noPython = true
		fmt.Println("python3 is not installed: tiny files not measured")
	}
	return nil
}

// tinyFiles is a Python program that creates argv[1] directories of
// argv[2] files of one short line each in the current directory.
const tinyFiles = `import os, sys
dirs, files = int(sys.argv[1]), int(sys.argv[2])
for d in range(dirs):
    name = "d%03d" % d
    os.mkdir(name)
    for f in range(files):
        with open("%s/f%04d.txt" % (name, f), "w") as fh:
            fh.write("tiny file %06d of a generated tree\n" % (d * files + f))
`

// runner runs a command in dir with env added to the environment.
type runner func(dir string, env []string, name string, args ...string) error

// untimed is the runner that only runs the command.
func untimed(dir string, env []string, name string, args ...string) error {
	_, err := timedEnv(dir, env, name, args...)
	return err
}

// npmCI installs the prepared project's dependencies into proj with
// run, from the warmed cache.
func npmCI(c *config, proj string, run runner) error {
	a := &c.agent
	os.MkdirAll(proj, 0o755)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(a.npmProject, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(proj, f), b, 0o644); err != nil {
			return err
		}
	}
	return run(proj, nil, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--cache", a.npmCache)
}

// goBuild unpacks the module and its GOCACHE into tree and builds it
// there with run.
func goBuild(c *config, tree string, run runner) error {
	a := &c.agent
	cache := filepath.Join(tree, ".gocache")
	os.MkdirAll(cache, 0o755)
	for tarball, into := range map[string]string{a.goTree: tree, a.goCache: cache} {
		if b, err := exec.Command("tar", "-C", into, "-xf", tarball).CombinedOutput(); err != nil {
			return fmt.Errorf("tar -x %s: %v: %s", tarball, err, b)
		}
	}
	env := []string{"GOCACHE=" + cache, "GOFLAGS=-mod=vendor", "GOPROXY=off", "GOTOOLCHAIN=local"}
	return run(tree, env, "go", "build", "-o", "cowfs.bin", "./cmd/cowfs")
}
