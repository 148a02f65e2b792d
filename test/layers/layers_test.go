// Package layers checks the layering the package documentation states:
// which of cowfs's packages each may depend on.
package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cowfs/cowfs/"

// goFuse is cowfs's patched copy of go-fuse (third_party/README.md): the
// rules name it as one package, "go-fuse", whatever part is imported.
const goFuse = "internal/_gofuse"

// allowed lists, for each package, the cowfs packages it may depend on,
// directly or not. A package missing here may depend on anything (the
// daemon, tests, tools).
var allowed = map[string][]string{
	"backing":      {},
	"sparse":       {},
	"privdir":      {},
	"journal/pack": {},
	"journal/wal":  {},
	"journal":      {"journal/pack", "journal/wal", "sparse"},
	"ctl":          {"privdir"},
	"aside":        {"backing"},
	"agent":        {"journal", "journal/pack", "journal/wal", "sparse"},
	"capture":      {"journal", "journal/pack", "journal/wal", "backing", "sparse"},
	"fs":           {"journal", "journal/pack", "journal/wal", "capture", "aside", "backing", "sparse", "agent", "go-fuse"},
	"rollback":     {"journal", "journal/pack", "journal/wal", "capture", "aside", "backing", "sparse"},
	"rescan":       {"journal", "journal/pack", "journal/wal", "capture", "aside", "backing", "sparse"},
	"mcpserver":    {"ctl", "privdir", "human"},
	"hook":         {"ctl", "privdir", "human"},
	// The certificates of the TLS tests: the standard library only.
	"test/certs": {},
}

// direct lists packages checked on their direct imports only.
var direct = map[string][]string{
	"cmd/cowfs": {"daemon", "ctl", "mcpserver", "hook", "human"},
}

// TestLayers reads the imports of every package's non-test files (so a
// change to them reruns the test) and checks them against the rules.
func TestLayers(t *testing.T) {
	imports := moduleImports(t, filepath.Join("..", ".."))
	for name, ok := range allowed {
		if _, exists := imports[name]; !exists {
			t.Errorf("package %s named by the rules has no files", name)
		}
		for _, dep := range closure(imports, name) {
			if !contains(ok, dep) {
				t.Errorf("%s depends on %s; it may only use %v (see its package documentation)", name, dep, ok)
			}
		}
	}
	for name, ok := range direct {
		for dep := range imports[name] {
			if !contains(ok, dep) {
				t.Errorf("%s imports %s; it may only import %v", name, dep, ok)
			}
		}
	}
}

// TestGoFuseImporters checks that fs is the only package, tests
// included, that uses go-fuse (fs/doc.go: the FUSE boundary is fs's),
// and that nothing imports the published module beside the copy.
func TestGoFuseImporters(t *testing.T) {
	err := walkGo(filepath.Join("..", ".."), func(pkg, path string, test bool) {
		switch {
		case strings.HasPrefix(path, "github.com/hanwen/go-fuse"):
			t.Errorf("%s imports %s: cowfs uses its patched copy, %s%s", pkg, path, module, goFuse)
		case strings.HasPrefix(path, module+goFuse) && pkg != "fs":
			t.Errorf("%s imports %s: only fs uses go-fuse", pkg, path)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moduleImports maps each package of the module under root to the
// cowfs packages its non-test files import.
func moduleImports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	err := walkGo(root, func(pkg, path string, test bool) {
		if out[pkg] == nil {
			out[pkg] = map[string]bool{}
		}
		dep, ours := strings.CutPrefix(path, module)
		if test || !ours {
			return
		}
		if strings.HasPrefix(dep, goFuse+"/") {
			dep = "go-fuse"
		}
		out[pkg][dep] = true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// walkGo calls f with every import of every Go file of the module under
// root, and its package (the directory, relative to root). It skips what
// the go command skips in ./... (directories starting with "." or "_",
// such as the go-fuse copy, and testdata) and the clients' node_modules.
func walkGo(root string, f func(pkg, path string, test bool)) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata" || d.Name() == "node_modules") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		file, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			f(pkg, path, strings.HasSuffix(p, "_test.go"))
		}
		return nil
	})
}

// closure returns every cowfs package name depends on, sorted.
func closure(imports map[string]map[string]bool, name string) []string {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		for dep := range imports[p] {
			if !seen[dep] {
				seen[dep] = true
				visit(dep)
			}
		}
	}
	visit(name)
	var deps []string
	for d := range seen {
		deps = append(deps, d)
	}
	sort.Strings(deps)
	return deps
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
