// Package testenv says whether a test can run here, and skips it when it
// cannot — unless skips are not allowed (COWFS_TEST_DISALLOW_SKIP, set by
// CI), where a test that cannot run fails instead. Every package's tests
// that need root, /dev/fuse or a tool go through it, so CI never passes by
// skipping.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// SkipsDisallowed reports whether tests that cannot run must fail.
func SkipsDisallowed() bool { return os.Getenv("COWFS_TEST_DISALLOW_SKIP") != "" }

// Skip skips t, or fails it where skips are not allowed.
func Skip(t testing.TB, why string) {
	t.Helper()
	if SkipsDisallowed() {
		t.Fatalf("cannot run here: %s", why)
	}
	t.Skip(why)
}

// NeedRoot skips t unless it runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root")
	}
}

// NeedFUSE skips t unless it can mount FUSE filesystems: root and
// /dev/fuse.
func NeedFUSE(t testing.TB) {
	t.Helper()
	NeedRoot(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		Skip(t, "needs /dev/fuse")
	}
}

// NeedTool skips t unless the named program is on PATH, and returns its
// path.
func NeedTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, name+" is not installed")
	}
	return p
}
