package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cowfs/cowfs/ctl"
)

// target is a filesystem under test: it gives an empty directory to run
// a workload in, and takes it down afterwards.
type target interface {
	name() string
	// setup prepares an empty workspace in base and returns its path.
	setup(base string) (string, error)
	teardown() error
	// daemon is the serving process's pid, or 0.
	daemon() int
	// requests returns the FUSE requests served so far, by operation,
	// or nil if the target does not count them.
	requests() map[string]uint64
	// newEpoch makes what is in the workspace older than what comes
	// next (cowfs: a new step of the open turn, so changes to files
	// made before it capture pre-images); a no-op elsewhere.
	newEpoch() error
}

func targets(c *config) []target {
	ts := []target{&native{}, &loopback{bin: c.loopback}}
	if p, err := exec.LookPath("fuse-overlayfs"); err == nil {
		ts = append(ts, &overlay{bin: p})
	} else {
		fmt.Println("fuse-overlayfs is not installed (apt-get install fuse-overlayfs): not measured")
	}
	// cowfs twice: as most harnesses run it, every process the agent's,
	// and with the turn scoped to the agent's processes (the bench and
	// what it runs, followed through the process-events connector), so
	// the cost of deciding whose each change is shows beside it.
	ts = append(ts, &cowfs{bin: c.cowfs, profile: c.profile}, &cowfs{bin: c.cowfs, profile: c.profile, scoped: true})
	if c.baseBin != "" {
		ts = append(ts, &cowfs{bin: c.baseBin, profile: c.profile, base: true})
	}
	if c.targets == "" {
		return ts
	}
	// Only when named: cowfs with FUSE passthrough for the files a turn
	// creates, and cowfs whose daemon runs Go on one processor
	// (GOMAXPROCS=1), beside cowfs in the same run.
	ts = append(ts, &cowfs{bin: c.cowfs, profile: c.profile, passthrough: true},
		&cowfs{bin: c.cowfs, profile: c.profile, oneProc: true})
	var chosen []target
	for _, t := range ts {
		for _, n := range strings.Split(c.targets, ",") {
			if strings.TrimSpace(n) == t.name() {
				chosen = append(chosen, t)
			}
		}
	}
	return chosen
}

type native struct{}

func (native) name() string { return "native" }
func (native) setup(base string) (string, error) {
	d := filepath.Join(base, "native")
	return d, os.MkdirAll(d, 0o755)
}
func (native) teardown() error             { return nil }
func (native) daemon() int                 { return 0 }
func (native) requests() map[string]uint64 { return nil }
func (native) newEpoch() error             { return nil }

// fuseTarget is a FUSE daemon started with a command line, mounted at
// mnt, stopped by unmounting.
type fuseTarget struct {
	mnt string
	cmd *exec.Cmd
	pid int
}

func (f *fuseTarget) start(mnt string, name string, args ...string) error {
	f.mnt = mnt
	f.cmd = exec.Command(name, args...)
	f.cmd.Stdout, f.cmd.Stderr = os.Stderr, os.Stderr
	if err := f.cmd.Start(); err != nil {
		return err
	}
	f.pid = f.cmd.Process.Pid
	return waitMounted(mnt)
}

func (f *fuseTarget) teardown() error {
	if f.mnt == "" {
		return nil
	}
	err := unmount(f.mnt)
	if f.cmd != nil {
		f.cmd.Wait()
	}
	f.mnt = ""
	return err
}

func (f *fuseTarget) daemon() int                 { return f.pid }
func (f *fuseTarget) requests() map[string]uint64 { return nil }
func (f *fuseTarget) newEpoch() error             { return nil }

// loopback is go-fuse's own example loopback, with the options cowfs
// uses: direct mount, allow_other, default_permissions.
type loopback struct {
	fuseTarget
	bin string
}

func (l *loopback) name() string { return "go-fuse loopback" }
func (l *loopback) setup(base string) (string, error) {
	orig, mnt := filepath.Join(base, "lb-orig"), filepath.Join(base, "lb")
	os.MkdirAll(orig, 0o755)
	os.MkdirAll(mnt, 0o755)
	return mnt, l.start(mnt, l.bin, "-q", "-directmountstrict", "-allow-other", mnt, orig)
}

type overlay struct {
	fuseTarget
	bin string
}

func (o *overlay) name() string { return "fuse-overlayfs" }
func (o *overlay) setup(base string) (string, error) {
	dirs := map[string]string{}
	for _, d := range []string{"lower", "upper", "work", "ovl"} {
		dirs[d] = filepath.Join(base, d)
		os.MkdirAll(dirs[d], 0o755)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,allow_other", dirs["lower"], dirs["upper"], dirs["work"])
	err := o.start(dirs["ovl"], o.bin, "-f", "-o", opts, dirs["ovl"])
	return dirs["ovl"], err
}

// cowfs is cowfs with a turn open, as an agent harness runs it;
// scoped, the turn names its agent: this process and its descendants.
type cowfs struct {
	bin     string
	profile string // directory for CPU profiles, if any
	scoped  bool
	// passthrough mounts with --passthrough.
	passthrough bool
	// oneProc runs the daemon with GOMAXPROCS=1.
	oneProc bool
	// base: bin was built from the commit -base names.
	base  bool
	state string
	mnt   string
	pid   int
	ctl   *ctl.Client
}

func (c *cowfs) name() string {
	switch {
	case c.scoped:
		return "cowfs scoped"
	case c.passthrough:
		return "cowfs passthrough"
	case c.oneProc:
		return "cowfs 1P"
	case c.base:
		return "cowfs base"
	}
	return "cowfs"
}
func (c *cowfs) setup(base string) (string, error) {
	backing, mnt := filepath.Join(base, "cowfs-backing"), filepath.Join(base, "cowfs")
	c.state, c.mnt = filepath.Join(base, "cowfs-state"), mnt
	os.MkdirAll(backing, 0o755)
	os.MkdirAll(mnt, 0o755)
	args := []string{"mount", "--background", "--mountpoint", mnt}
	if c.passthrough {
		args = append(args, "--passthrough")
	}
	if c.profile != "" {
		args = append(args, "--cpuprofile", filepath.Join(c.profile, filepath.Base(base)+".prof"))
	}
	if _, err := c.run(append(args, backing)...); err != nil {
		return "", err
	}
	out, err := c.run("-w", mnt, "status", "--json")
	if err != nil {
		return "", err
	}
	var st ctl.Status
	json.Unmarshal(out, &st)
	c.pid, c.ctl = st.Pid, ctl.NewClient(st.Socket)
	begin := []string{"-w", mnt, "turn", "begin"}
	if c.scoped {
		begin = append(begin, "--agent-pid", strconv.Itoa(os.Getpid()))
	}
	_, err = c.run(begin...)
	return mnt, err
}

func (c *cowfs) run(args ...string) ([]byte, error) {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), "COWFS_STATE_DIR="+c.state)
	if c.oneProc {
		cmd.Env = append(cmd.Env, "GOMAXPROCS=1")
	}
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return out, fmt.Errorf("cowfs %v: %v: %s", args, err, ee.Stderr)
		}
		return out, fmt.Errorf("cowfs %v: %v", args, err)
	}
	return out, nil
}

func (c *cowfs) teardown() error {
	if c.mnt == "" {
		return nil
	}
	_, err := c.run("-w", c.mnt, "umount")
	c.mnt = ""
	return err
}

func (c *cowfs) daemon() int { return c.pid }

func (c *cowfs) newEpoch() error {
	_, err := c.run("-w", c.mnt, "turn", "step", fmt.Sprintf("bench-%d", time.Now().UnixNano()))
	return err
}

// requests asks the daemon for its count of FUSE requests.
func (c *cowfs) requests() map[string]uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.ctl.Status(ctx)
	if err != nil {
		return nil
	}
	if st.FUSERequests == nil {
		return map[string]uint64{}
	}
	return st.FUSERequests
}

// waitMounted waits until a FUSE filesystem is mounted at mnt.
func waitMounted(mnt string) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if isMounted(mnt) {
			return nil
		}
	}
	return fmt.Errorf("%s was not mounted within 10 s", mnt)
}

// isMounted reports whether a filesystem is mounted at mnt: the
// mountpoint's device differs from its parent directory's, or its
// server is gone (ENOTCONN).
func isMounted(mnt string) bool {
	var st, parent syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		return err == syscall.ENOTCONN
	}
	if syscall.Stat(filepath.Dir(mnt), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

func unmount(mnt string) error {
	for i := 0; i < 50; i++ {
		if err := syscall.Unmount(mnt, 0); err == nil || !isMounted(mnt) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return syscall.Unmount(mnt, syscall.MNT_DETACH)
}

// peakRSS returns the peak resident set of pid, in bytes.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
