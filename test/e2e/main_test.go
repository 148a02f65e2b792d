// Package e2e drives the real cowfs binary on real FUSE mounts, as a
// harness would: mount a workspace, begin a turn, run shell commands in
// it, end the turn, and check what the control socket and the CLI say.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// cowfsBin is the binary under test, built once by TestMain.
var cowfsBin string

func TestMain(m *testing.M) {
	testenv.HelperMain() // the foreign server of socket_test.go
	dir, err := os.MkdirTemp("", "cowfs-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cowfsBin = filepath.Join(dir, "cowfs")
	build := exec.Command("go", "build", "-o", cowfsBin, "github.com/cowfs/cowfs/cmd/cowfs")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cowfs:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
