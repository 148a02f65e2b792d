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

// allowed lists, for each package, the cowfs packages it may depend on,
// directly or not. A package missing here may depend on anything (the
// daemon, tests, tools).
var allowed = map[string][]string{
	"backing":   {},
	"sparse":    {},
	"privdir":   {},
	"journal":   {"sparse"},
	"ctl":       {"privdir"},
	"aside":     {"backing"},
	"agent":     {"journal", "sparse"},
	"fs":        {"journal", "aside", "backing", "sparse", "agent"},
	"rollback":  {"journal", "aside", "backing", "sparse"},
	"rescan":    {"journal", "aside", "backing", "sparse"},
	"mcpserver": {"ctl", "privdir"},
	"hook":      {"ctl", "privdir"},
}

// direct lists packages checked on their direct imports only.
var direct = map[string][]string{
	"cmd/cowfs": {"daemon", "ctl", "mcpserver", "hook"},
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

// moduleImports maps each package of the module under root to the
// cowfs packages its non-test files import.
func moduleImports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "third_party" || d.Name() == "node_modules") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		if out[pkg] == nil {
			out[pkg] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if dep, ours := strings.CutPrefix(path, module); ours {
				out[pkg][dep] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
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
