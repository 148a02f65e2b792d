// Package deploy checks the Kubernetes recipe in deploy/kubernetes against
// the Kubernetes API types and against cowfs itself, so the recipe cannot
// rot: every manifest decodes strictly into its API type (an unknown or
// misspelt field fails, as the API server's strict validation would), and
// what cowfs depends on is checked field by field (kubernetes_test.go):
// /dev/fuse and the capability, the volume under the journal and state,
// the socket shared with the harness, the TLS Secret, the Service's port,
// and every cowfs command line against the flags the built binary has
// (cli_test.go).
//
// k8s.io/api and apimachinery are test dependencies only: no cowfs
// package imports them.
package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// recipeDir is the recipe, relative to this package.
const recipeDir = "../../deploy/kubernetes"

// kustomization is the part of kustomize's Kustomization and Component
// the recipe uses. Decoding is strict here too: a field the recipe starts
// to use is added here, with a check if cowfs depends on it.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources,omitempty"`
	Components []string `json:"components,omitempty"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

// A doc is one YAML document of a manifest file, decoded.
type doc struct {
	file string // relative to recipeDir
	n    int    // its place in the file, from 1
	json []byte // as JSON, for patching
	obj  any    // *corev1.Pod, *corev1.Service, … or *kustomization
}

func (d doc) String() string { return fmt.Sprintf("%s (document %d)", d.file, d.n) }

// newObject returns the type a document of apiVersion and kind decodes
// into; a kind the recipe has not used before must be added here.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "v1 Pod":
		return &corev1.Pod{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}, nil
	case "kustomize.config.k8s.io/v1beta1 Kustomization", "kustomize.config.k8s.io/v1alpha1 Component":
		return &kustomization{}, nil
	}
	return nil, fmt.Errorf("apiVersion %q kind %q: this test does not know it; add its type to newObject and check what cowfs needs of it", apiVersion, kind)
}

// decodeStrict decodes a YAML document into obj as the API server's
// strict field validation does: keys are matched case-sensitively, and
// an unknown or duplicated field is an error.
func decodeStrict(y []byte, obj any) ([]byte, error) {
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return nil, err
	}
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	return j, errors.Join(strict...)
}

// loadRecipe decodes every YAML document of every .yaml or .yml file
// under recipeDir.
func loadRecipe(t *testing.T) []doc {
	t.Helper()
	var docs []doc
	err := filepath.WalkDir(recipeDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		rel, _ := filepath.Rel(recipeDir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for n := 1; ; n++ {
			y, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if len(bytes.TrimSpace(stripComments(y))) == 0 {
				continue
			}
			var tm struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(y, &tm); err != nil {
				return fmt.Errorf("%s (document %d): %w", rel, n, err)
			}
			obj, err := newObject(tm.APIVersion, tm.Kind)
			if err != nil {
				return fmt.Errorf("%s (document %d): %w", rel, n, err)
			}
			j, err := decodeStrict(y, obj)
			if err != nil {
				return fmt.Errorf("%s (document %d): %s %s: %w", rel, n, tm.APIVersion, tm.Kind, err)
			}
			docs = append(docs, doc{file: rel, n: n, json: j, obj: obj})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// stripComments blanks YAML comment lines, so that a document of
// comments alone counts as empty.
func stripComments(y []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(y, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(append(out, l...), '\n')
		}
	}
	return out
}

// find returns the objects of type T in docs, with the documents they
// came from.
func find[T any](docs []doc) ([]*T, []doc) {
	var objs []*T
	var from []doc
	for _, d := range docs {
		if o, ok := d.obj.(*T); ok {
			objs = append(objs, o)
			from = append(from, d)
		}
	}
	return objs, from
}

// TestManifestsDecodeStrictly loads the recipe: every document decodes
// into its API type, and every manifest is reached from the
// kustomization (so none is checked here and never deployed).
func TestManifestsDecodeStrictly(t *testing.T) {
	docs := loadRecipe(t)
	if len(docs) < 5 {
		t.Fatalf("found only %d manifests in %s: the loader is broken", len(docs), recipeDir)
	}
	reached := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		for _, d := range docs {
			k, ok := d.obj.(*kustomization)
			if !ok || filepath.Dir(d.file) != dir {
				continue
			}
			reached[d.file] = true
			for _, r := range k.Resources {
				reached[filepath.Join(dir, r)] = true
			}
			for _, p := range k.Patches {
				reached[filepath.Join(dir, p.Path)] = true
			}
			for _, c := range k.Components {
				walk(filepath.Join(dir, c))
			}
		}
	}
	walk(".")
	for _, d := range docs {
		// A component the base names only in a comment (an opt-in
		// variant, variants_test.go) is a root of its own.
		if k, ok := d.obj.(*kustomization); ok && k.Kind == "Component" {
			walk(filepath.Dir(d.file))
		}
	}
	for _, d := range docs {
		if !reached[d.file] {
			t.Errorf("%s: no kustomization names it", d.file)
		}
	}
	for f := range reached {
		if !slices.ContainsFunc(docs, func(d doc) bool { return d.file == f }) {
			t.Errorf("a kustomization names %s, which is no manifest here", f)
		}
	}
}

// TestStrictDecodingRefuses keeps the loader honest: a misspelt field, a
// field in the wrong case and a duplicated one are each refused.
func TestStrictDecodingRefuses(t *testing.T) {
	for _, y := range []string{
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    imagee: x\n",
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    Image: x\n",
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    image: x\n    image: y\n",
	} {
		if _, err := decodeStrict([]byte(y), &corev1.Pod{}); err == nil {
			t.Errorf("decoded:\n%s", y)
		}
	}
}
