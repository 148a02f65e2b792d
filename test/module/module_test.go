// Package module checks what installing cowfs as a Go module needs:
// `go install github.com/cowfs/cowfs/cmd/cowfs@<version>` refuses a
// module whose go.mod has a replace or exclude directive, so cowfs's
// patched go-fuse is a package tree of this module
// (internal/_gofuse, see third_party/README.md), not a replaced module.
package module

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoModInstallable fails when go.mod has a directive that
// `go install module@version` refuses, or requires the published
// go-fuse, which would link a second, unpatched go-fuse beside the copy.
func TestGoModInstallable(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "//")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "replace", "exclude":
			t.Errorf("go.mod:%d: %q: go install cowfs@version refuses a module with a %s directive", n, sc.Text(), fields[0])
		}
		if strings.Contains(line, "github.com/hanwen/go-fuse") {
			t.Errorf("go.mod:%d: %q: cowfs uses its patched copy of go-fuse, internal/_gofuse", n, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
