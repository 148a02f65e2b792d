package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// A recipe is the decoded manifests, with the parts the checks use.
type recipe struct {
	docs    []doc
	pod     *corev1.Pod // the sandbox Pod, as the base kustomization deploys it
	podDoc  doc
	pvcs    []*corev1.PersistentVolumeClaim
	svcs    []*corev1.Service
	base    *kustomization
	sandbox *corev1.Container // the container that runs cowfs run
	run     invocation        // its command line
}

func load(t *testing.T) *recipe {
	t.Helper()
	r := &recipe{docs: loadRecipe(t)}
	// Pods at the root; those in a component's directory are patches.
	var pods []*corev1.Pod
	var podDocs []doc
	all, allDocs := find[corev1.Pod](r.docs)
	for i, p := range all {
		if filepath.Dir(allDocs[i].file) == "." {
			pods, podDocs = append(pods, p), append(podDocs, allDocs[i])
		}
	}
	if len(pods) != 1 {
		t.Fatalf("the recipe has %d Pods; these checks expect one, the sandbox", len(pods))
	}
	r.pod, r.podDoc = pods[0], podDocs[0]
	r.pvcs, _ = find[corev1.PersistentVolumeClaim](r.docs)
	r.svcs, _ = find[corev1.Service](r.docs)
	ks, kdocs := find[kustomization](r.docs)
	for i, k := range ks {
		if kdocs[i].file == "kustomization.yaml" {
			r.base = k
		}
	}
	if r.base == nil {
		t.Fatal("no kustomization.yaml at the recipe's root")
	}
	for _, c := range containers(r.pod) {
		words := argv(c)
		if len(words) < 2 || words[0] != "cowfs" || words[1] != "run" {
			continue
		}
		if r.sandbox != nil {
			t.Fatalf("containers %s and %s both run cowfs run", r.sandbox.Name, c.Name)
		}
		// A flag cowfs lacks is TestCowfsCommandLines's to report; the
		// other checks still read the values given to the flags it has,
		// and to those written --flag=value.
		inv, _ := resolve(t, words[1:])
		r.sandbox, r.run = c, inv
	}
	if r.sandbox == nil {
		t.Fatal("no container runs cowfs run")
	}
	return r
}

// containers returns the Pod's init containers (sidecars among them)
// and containers.
func containers(p *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range p.Spec.InitContainers {
		out = append(out, &p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		out = append(out, &p.Spec.Containers[i])
	}
	return out
}

// argv is what a container runs: its command, then its args.
func argv(c *corev1.Container) []string { return append(slices.Clone(c.Command), c.Args...) }

// script returns the shell text a container runs with sh -c, if it does.
func script(c *corev1.Container) (string, bool) {
	a := argv(c)
	if len(a) >= 3 && (a[0] == "sh" || a[0] == "bash" || a[0] == "/bin/sh") && a[1] == "-c" {
		return a[2], true
	}
	return "", false
}

// env returns the value the container's environment gives name.
func env(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, e.ValueFrom == nil
		}
	}
	return "", false
}

func volume(p *corev1.Pod, name string) *corev1.Volume {
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == name {
			return &p.Spec.Volumes[i]
		}
	}
	return nil
}

// mountAt returns the container's mount at exactly path, and its volume.
func mountAt(p *corev1.Pod, c *corev1.Container, path string) (*corev1.VolumeMount, *corev1.Volume) {
	for i, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == filepath.Clean(path) {
			return &c.VolumeMounts[i], volume(p, m.Name)
		}
	}
	return nil, nil
}

// mountHolding returns the container's mount that path is at or beneath
// (the deepest), and its volume.
func mountHolding(p *corev1.Pod, c *corev1.Container, path string) (*corev1.VolumeMount, *corev1.Volume) {
	var best *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if within(path, m.MountPath) && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = &c.VolumeMounts[i]
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, volume(p, best.Name)
}

// within reports whether path is dir or beneath it.
func within(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// variants returns the Pod each way the recipe can be deployed: as the
// base kustomization makes it ("base"), and with each component's
// strategic merge patches applied (named by the component's directory).
func variants(t *testing.T, r *recipe) map[string]*corev1.Pod {
	t.Helper()
	out := map[string]*corev1.Pod{"base": r.pod}
	ks, kdocs := find[kustomization](r.docs)
	for i, k := range ks {
		if k.Kind != "Component" {
			continue
		}
		dir := filepath.Dir(kdocs[i].file)
		j := r.podDoc.json
		for _, p := range k.Patches {
			var patch *doc
			for _, d := range r.docs {
				if d.file == filepath.Join(dir, p.Path) {
					patch = &d
				}
			}
			if patch == nil {
				t.Fatalf("%s: patch %s is no manifest", kdocs[i].file, p.Path)
			}
			pp, ok := patch.obj.(*corev1.Pod)
			if !ok || pp.Name != r.pod.Name {
				t.Fatalf("%s: patches something other than the sandbox Pod %s", patch, r.pod.Name)
			}
			var err error
			if j, err = strategicpatch.StrategicMergePatch(j, patch.json, corev1.Pod{}); err != nil {
				t.Fatalf("%s: %v", patch, err)
			}
		}
		var p corev1.Pod
		if _, err := decodeStrict(j, &p); err != nil {
			t.Fatalf("the sandbox Pod with %s: %v", dir, err)
		}
		out[dir] = &p
	}
	if len(out) < 2 {
		t.Fatal("no variant of the sandbox (the privileged component) found")
	}
	return out
}

// dockerfile is what the repository's Dockerfile says the checks rely on.
type dockerfile struct {
	image      string   // the name 'docker build -t NAME .' gives it
	entrypoint []string // ENTRYPOINT
	env        map[string]string
	volumes    []string
}

var (
	buildTag   = regexp.MustCompile(`(?m)^#\s+docker build -t (\S+) \.$`)
	entrypoint = regexp.MustCompile(`(?m)^ENTRYPOINT \[(.*)\]$`)
	envLine    = regexp.MustCompile(`(?m)^ENV (\S+)=(\S+)$`)
	volumeLine = regexp.MustCompile(`(?m)^VOLUME (\S+)$`)
)

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	var d dockerfile
	if m := buildTag.FindStringSubmatch(s); m != nil {
		d.image = m[1]
	} else {
		t.Fatal("the Dockerfile's comment names no image (docker build -t NAME .)")
	}
	m := entrypoint.FindStringSubmatch(s)
	if m == nil {
		t.Fatal("the Dockerfile has no ENTRYPOINT [...]")
	}
	for _, w := range strings.Split(m[1], ",") {
		d.entrypoint = append(d.entrypoint, strings.Trim(strings.TrimSpace(w), `"`))
	}
	d.env = map[string]string{}
	for _, m := range envLine.FindAllStringSubmatch(s, -1) {
		d.env[m[1]] = m[2]
	}
	for _, m := range volumeLine.FindAllStringSubmatch(s, -1) {
		d.volumes = append(d.volumes, m[1])
	}
	return d
}

// imageName is an image reference without its tag or digest.
func imageName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}
