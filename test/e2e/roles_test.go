package e2e

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// roleEnv makes the test binary, re-executed, play a part in a test
// instead of running tests: the racer (racer_test.go) or the syscall
// trap's wrapper (syscalltrap_test.go). It is read in init, before
// TestMain builds anything.
const roleEnv = "COWFS_E2E_ROLE"

func init() {
	switch os.Getenv(roleEnv) {
	case "":
	case racerRole:
		os.Exit(racerMain(os.Stdin, os.Stdout))
	case trapRole:
		trapExec()
	default:
		os.Stderr.WriteString("unknown " + roleEnv + "\n")
		os.Exit(2)
	}
}

// roleBinary copies the test binary where every user can execute it
// (a temporary directory of mode 0755), for the roles that run as
// another user, and returns its path.
func roleBinary(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "cowfs-e2e-role-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "e2e.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}
