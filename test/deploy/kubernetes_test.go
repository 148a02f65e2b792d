package deploy

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestFUSEDeviceAndCapability: cowfs run mounts FUSE in a mount
// namespace of its own, so the sandbox container needs /dev/fuse and
// CAP_SYS_ADMIN, in every variant. Without privileged, /dev/fuse comes
// from a device plugin's resource (a hostPath device node is not enough:
// the container's device cgroup still refuses to open it), the runtime's
// AppArmor profile must let mount(2) through, and when every capability
// is dropped, those root needs to serve another uid's files are added
// back.
func TestFUSEDeviceAndCapability(t *testing.T) {
	r := load(t)
	for name, p := range variants(t, r) {
		var c *corev1.Container
		for _, x := range containers(p) {
			if x.Name == r.sandbox.Name {
				c = x
			}
		}
		sc := c.SecurityContext
		privileged := sc != nil && sc.Privileged != nil && *sc.Privileged
		for _, v := range p.Spec.Volumes {
			if v.HostPath != nil && v.HostPath.Path == "/dev/fuse" && !privileged {
				t.Errorf("%s: volume %s mounts /dev/fuse from the host: the device cgroup refuses it to an unprivileged container; request a device plugin's resource", name, v.Name)
			}
		}
		if privileged {
			for res := range c.Resources.Limits {
				if strings.HasSuffix(string(res), "/fuse") {
					t.Errorf("%s: privileged, yet it asks for %s: a node without the device plugin would never run it", name, res)
				}
			}
			continue
		}
		fuse := false
		for res, q := range c.Resources.Limits {
			if strings.HasSuffix(string(res), "/fuse") && q.Cmp(resource.MustParse("1")) >= 0 {
				fuse = true
			}
		}
		if !fuse {
			t.Errorf("%s: container %s is not privileged and asks for no FUSE device (a device plugin's <domain>/fuse resource)", name, c.Name)
		}
		if sc == nil || sc.Capabilities == nil {
			t.Errorf("%s: container %s has no capabilities: cowfs run needs SYS_ADMIN", name, c.Name)
			continue
		}
		add := sc.Capabilities.Add
		need := map[corev1.Capability]string{"SYS_ADMIN": "mount(2) and a private mount namespace"}
		if slices.Contains(sc.Capabilities.Drop, "ALL") {
			// What root needs, beyond SYS_ADMIN, to journal and roll back
			// files of the agent's uid and to signal its processes; the
			// runtimes' default set has them, dropping ALL takes them.
			need["CHOWN"] = "rollback restores owners"
			need["DAC_OVERRIDE"] = "the daemon reads and writes the agent's files and directories"
			need["FOWNER"] = "rollback restores modes and times of files root does not own"
			need["FSETID"] = "set-group-ID bits survive a rollback"
			need["KILL"] = "signals reach the agent's processes (SIGTERM when the pod stops)"
			if agentUID(r) != "" {
				need["SETUID"] = "setpriv drops the agent to its uid"
				need["SETGID"] = "setpriv drops the agent's groups"
			}
		}
		for capName, why := range need {
			if !slices.Contains(add, capName) {
				t.Errorf("%s: container %s lacks capability %s: %s", name, c.Name, capName, why)
			}
		}
		if !appArmorAllowsMount(p, c) {
			t.Errorf("%s: container %s is confined by the runtime's default AppArmor profile, which forbids mount(2): set appArmorProfile Unconfined or a Localhost profile that allows fuse", name, c.Name)
		}
	}
}

func appArmorAllowsMount(p *corev1.Pod, c *corev1.Container) bool {
	prof := (*corev1.AppArmorProfile)(nil)
	if p.Spec.SecurityContext != nil {
		prof = p.Spec.SecurityContext.AppArmorProfile
	}
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		prof = c.SecurityContext.AppArmorProfile
	}
	return prof != nil && (prof.Type == corev1.AppArmorProfileTypeUnconfined || prof.Type == corev1.AppArmorProfileTypeLocalhost)
}

// TestHistoryOnPersistentVolume: the state directory (and the journal in
// it, or wherever --journal puts it) and the workspace are on the
// PersistentVolumeClaim, so a pod rescheduled elsewhere finds both; the
// journal fits the claim.
func TestHistoryOnPersistentVolume(t *testing.T) {
	r := load(t)
	c := r.sandbox
	claimAt := func(what, path string) string {
		t.Helper()
		m, v := mountHolding(r.pod, c, path)
		if m == nil || v == nil || v.PersistentVolumeClaim == nil {
			t.Errorf("%s %s is on no PersistentVolumeClaim in container %s", what, path, c.Name)
			return ""
		}
		for _, pvc := range r.pvcs {
			if pvc.Name == v.PersistentVolumeClaim.ClaimName {
				return pvc.Name
			}
		}
		t.Errorf("%s %s: claim %s is not in the recipe", what, path, v.PersistentVolumeClaim.ClaimName)
		return ""
	}
	state, ok := env(c, "COWFS_STATE_DIR")
	if !ok || !filepath.IsAbs(state) {
		t.Fatalf("container %s sets no COWFS_STATE_DIR: the state's place would depend on the image", c.Name)
	}
	ws := r.run.value("-w") + r.run.value("--workspace")
	if !filepath.IsAbs(ws) {
		t.Fatalf("cowfs run's workspace %q is not an absolute path", ws)
	}
	stateClaim := claimAt("COWFS_STATE_DIR", state)
	if j := r.run.value("--journal"); j != "" {
		if claimAt("--journal", j) != stateClaim {
			t.Errorf("--journal %s is on another claim than the state", j)
		}
	}
	if wsClaim := claimAt("the workspace", ws); wsClaim != stateClaim {
		t.Errorf("the workspace is on claim %q, its history on %q: a rescheduled pod could find one without the other", wsClaim, stateClaim)
	}
	if within(state, ws) || within(ws, state) {
		t.Errorf("state %s and workspace %s nest: cowfs refuses its state inside the workspace", state, ws)
	}
	for _, pvc := range r.pvcs {
		if pvc.Name != stateClaim {
			continue
		}
		if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOnce) && !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOncePod) {
			t.Errorf("claim %s is not ReadWriteOnce(Pod): only one cowfs may hold a journal", pvc.Name)
		}
		req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		max := r.run.value("--max-journal-size")
		if max == "" {
			t.Errorf("cowfs run sets no --max-journal-size: its default need not fit claim %s (%s)", pvc.Name, req.String())
			continue
		}
		q, err := resource.ParseQuantity(strings.TrimSuffix(max, "B"))
		if err != nil {
			t.Errorf("--max-journal-size %s: %v", max, err)
		} else if q.Cmp(req) >= 0 {
			t.Errorf("--max-journal-size %s does not leave claim %s (%s) room for the workspace", max, pvc.Name, req.String())
		}
	}
}

// TestSocketSharedWithHarness: the control socket is in COWFS_SOCKET_DIR
// on an emptyDir, which the harness mounts at the same path with the
// same COWFS_SOCKET_DIR and names the same workspace (the socket's name
// comes from the workspace's path). A container before both makes that
// directory and the state directory 0700: kubelet makes an emptyDir
// 0777, which cowfs refuses for its socket.
func TestSocketSharedWithHarness(t *testing.T) {
	r := load(t)
	sock, ok := env(r.sandbox, "COWFS_SOCKET_DIR")
	if !ok {
		t.Fatalf("container %s sets no COWFS_SOCKET_DIR: the socket would be in the state directory, on no volume the harness shares", r.sandbox.Name)
	}
	m, v := mountAt(r.pod, r.sandbox, sock)
	if m == nil || v == nil || v.EmptyDir == nil {
		t.Fatalf("COWFS_SOCKET_DIR %s is no emptyDir mount of container %s", sock, r.sandbox.Name)
	}
	ws := r.run.value("-w") + r.run.value("--workspace")
	harnesses := 0
	for _, c := range containers(r.pod) {
		s, ok := script(c)
		if c == r.sandbox || !ok || len(cowfsWords(shellCommands(s))) == 0 {
			continue
		}
		harnesses++
		if hm, hv := mountAt(r.pod, c, sock); hm == nil || hv.Name != v.Name {
			t.Errorf("harness %s does not mount volume %s at %s", c.Name, v.Name, sock)
		}
		if e, _ := env(c, "COWFS_SOCKET_DIR"); e != sock {
			t.Errorf("harness %s: COWFS_SOCKET_DIR %q, the sandbox's is %q", c.Name, e, sock)
		}
		for _, words := range cowfsWords(shellCommands(s)) {
			inv, err := resolve(t, words)
			if err != nil {
				t.Errorf("harness %s: %v", c.Name, err)
				continue
			}
			if w := inv.value("-w") + inv.value("--workspace"); w != ws {
				t.Errorf("harness %s: cowfs %s names workspace %q, the sandbox's is %q: the socket's name comes from it", c.Name, strings.Join(words, " "), w, ws)
			}
		}
	}
	if harnesses == 0 {
		t.Error("no harness container runs cowfs beside the sandbox")
	}

	// The container that prepares the directories runs before both: it
	// makes the socket's directory and the state directory 0700, and
	// gives the workspace to the agent's uid when the agent runs as one.
	wsMount, _ := mountHolding(r.pod, r.sandbox, ws)
	stateMount, stateVol := mountHolding(r.pod, r.sandbox, mustEnv(t, r.sandbox, "COWFS_STATE_DIR"))
	var prepared bool
	for _, c := range r.pod.Spec.InitContainers {
		s, ok := script(&c)
		if !ok {
			continue
		}
		var chmod, chown []string
		for _, cmd := range shellCommands(s) {
			switch {
			case len(cmd) > 2 && cmd[0] == "chmod" && cmd[1] == "0700":
				chmod = append(chmod, cmd[2:]...)
			case len(cmd) > 2 && cmd[0] == "chown":
				chown = append(chown, cmd[2:]...)
			}
		}
		if chmod == nil {
			continue
		}
		prepared = true
		if sm, sv := mountAt(r.pod, &c, sock); sm == nil || sv.Name != v.Name || !slices.Contains(chmod, sock) {
			t.Errorf("init container %s does not make the socket's volume at %s 0700", c.Name, sock)
		}
		for _, cm := range c.VolumeMounts {
			if stateVol == nil || cm.Name != stateVol.Name || cm.SubPath != "" {
				continue
			}
			if p := filepath.Join(cm.MountPath, stateMount.SubPath); !slices.Contains(chmod, p) {
				t.Errorf("init container %s does not make the state directory (%s in it) 0700", c.Name, p)
			}
			if agentUID(r) != "" && wsMount != nil && wsMount.Name == cm.Name {
				if p := filepath.Join(cm.MountPath, wsMount.SubPath); len(chown) == 0 || !slices.Contains(chown, p) ||
					!strings.HasPrefix(shellCommandWith(s, "chown")[1], agentUID(r)+":") {
					t.Errorf("init container %s does not give the workspace (%s in it) to the agent's uid %s", c.Name, p, agentUID(r))
				}
			}
		}
		break
	}
	if !prepared {
		t.Errorf("no init container makes %s 0700: kubelet makes an emptyDir 0777, and cowfs refuses a socket directory others can write", sock)
	}
}

// TestAgentCannotBypassTheMount: the agent's command runs as a uid of
// its own with no capability and no way to gain one. With the
// container's SYS_ADMIN it could unmount the journaled view in its mount
// namespace and write the volume behind it, where no change has a
// pre-image to roll back to.
func TestAgentCannotBypassTheMount(t *testing.T) {
	r := load(t)
	uid := agentUID(r)
	if uid == "" || uid == "0" {
		t.Fatalf("the agent's command %q does not start with setpriv --reuid=UID (not 0)", r.run.rest)
	}
	for _, f := range []string{"--no-new-privs", "--inh-caps=-all", "--clear-groups", "--regid=" + uid} {
		if !slices.Contains(r.run.rest, f) {
			t.Errorf("the agent's setpriv lacks %s", f)
		}
	}
}

// agentUID returns the uid setpriv gives the agent's command, or "".
func agentUID(r *recipe) string {
	if len(r.run.rest) == 0 || r.run.rest[0] != "setpriv" {
		return ""
	}
	for _, w := range r.run.rest[1:] {
		if w == "--" {
			break
		}
		if uid, ok := strings.CutPrefix(w, "--reuid="); ok {
			return uid
		}
	}
	return ""
}

// shellCommandWith returns the first simple command of script that runs
// program, or nil.
func shellCommandWith(script, program string) []string {
	for _, c := range shellCommands(script) {
		if c[0] == program {
			return c
		}
	}
	return nil
}

func mustEnv(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	v, ok := env(c, name)
	if !ok {
		t.Fatalf("container %s sets no %s", c.Name, name)
	}
	return v
}

// tlsFiles are what --tls-dir holds: the CA that verifies peers, this
// side's certificate and its key.
var tlsFiles = []string{"ca.pem", "cert.pem", "key.pem"}

// TestTLSSecretAtTLSDir: --listen serves on every interface of the pod,
// and --tls-dir is a Secret mounted read-only, readable by root alone,
// with exactly the three files.
func TestTLSSecretAtTLSDir(t *testing.T) {
	r := load(t)
	port := listenPort(t, r)
	dir := r.run.value("--tls-dir")
	if dir == "" {
		t.Fatal("cowfs run has --listen but no --tls-dir")
	}
	m, v := mountAt(r.pod, r.sandbox, dir)
	if m == nil || v == nil || v.Secret == nil {
		t.Fatalf("--tls-dir %s is no Secret mounted in container %s", dir, r.sandbox.Name)
	}
	if !m.ReadOnly {
		t.Errorf("the Secret at %s is not mounted read-only", dir)
	}
	if m.SubPath != "" {
		t.Errorf("the Secret at %s is mounted with subPath: kubelet would never update it, so rotated certificates never arrive", dir)
	}
	s := v.Secret
	if s.SecretName == "" {
		t.Error("the TLS Secret volume names no Secret")
	}
	if s.DefaultMode == nil || *s.DefaultMode != 0o400 {
		t.Errorf("the TLS Secret's defaultMode is not 0400: key.pem is for root alone")
	}
	var paths []string
	for _, it := range s.Items {
		if it.Mode != nil && *it.Mode != 0o400 {
			t.Errorf("%s has mode %o", it.Path, *it.Mode)
		}
		paths = append(paths, it.Path)
	}
	slices.Sort(paths)
	if !slices.Equal(paths, tlsFiles) {
		t.Errorf("the TLS Secret's items give %v in %s, want %v (listing them makes a Secret without one fail the pod's start)", paths, dir, tlsFiles)
	}
	found := false
	for _, cp := range r.sandbox.Ports {
		if int(cp.ContainerPort) == port {
			found = cp.Name != ""
		}
	}
	if !found {
		t.Errorf("container %s declares no named port %d, --listen's", r.sandbox.Name, port)
	}
}

// listenPort checks cowfs run's --listen and returns its port.
func listenPort(t *testing.T, r *recipe) int {
	t.Helper()
	l := r.run.value("--listen")
	if l == "" {
		t.Fatal("cowfs run has no --listen: a harness elsewhere cannot reach the sandbox")
	}
	u, err := url.Parse(l)
	if err != nil || u.Scheme != "https" || u.Path != "" {
		t.Fatalf("--listen %q: want https://ADDR:PORT", l)
	}
	host, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatalf("--listen %q: %v", l, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		t.Errorf("--listen %q: a Service reaches the pod's address, not %s; listen on 0.0.0.0", l, host)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		t.Fatalf("--listen %q: port %q", l, p)
	}
	return port
}

// TestServiceReachesListener: a Service selects the sandbox Pod, and its
// port is --listen's, reaching the container's port of that number.
func TestServiceReachesListener(t *testing.T) {
	r := load(t)
	port := listenPort(t, r)
	ok := false
	for _, s := range r.svcs {
		sel := s.Spec.Selector
		if len(sel) == 0 {
			continue
		}
		matches := true
		for k, v := range sel {
			if r.pod.Labels[k] != v {
				matches = false
			}
		}
		if !matches {
			continue
		}
		for _, sp := range s.Spec.Ports {
			target := int(sp.TargetPort.IntVal)
			if sp.TargetPort.StrVal != "" {
				target = 0
				for _, cp := range r.sandbox.Ports {
					if cp.Name == sp.TargetPort.StrVal {
						target = int(cp.ContainerPort)
					}
				}
			} else if target == 0 {
				target = int(sp.Port)
			}
			if int(sp.Port) == port && target == port && (sp.Protocol == "" || sp.Protocol == corev1.ProtocolTCP) {
				ok = true
			}
		}
	}
	if !ok {
		t.Errorf("no Service selects Pod %s with port %d reaching container port %d (--listen's)", r.pod.Name, port, port)
	}
}

// TestImagesAreTheDockerfiles: every container runs the image the
// repository's Dockerfile builds, the kustomization's image rewrite
// names it, and the sandbox keeps the Dockerfile's workspace, socket
// directory and state volume.
func TestImagesAreTheDockerfiles(t *testing.T) {
	r := load(t)
	d := readDockerfile(t)
	for _, c := range containers(r.pod) {
		if imageName(c.Image) != d.image {
			t.Errorf("container %s runs image %q; the Dockerfile builds %q", c.Name, c.Image, d.image)
		}
	}
	if len(r.base.Images) == 0 || r.base.Images[0].Name != d.image {
		t.Errorf("kustomization.yaml's images do not name %q, the Dockerfile's image", d.image)
	}
	ep := d.entrypoint
	if len(ep) < 2 || ep[0] != "cowfs" || ep[1] != "run" {
		t.Fatalf("the Dockerfile's ENTRYPOINT %v is not cowfs run", ep)
	}
	epRun, err := resolve(t, ep[1:])
	if err != nil {
		t.Fatalf("the Dockerfile's ENTRYPOINT: %v", err)
	}
	if w, want := r.run.value("-w")+r.run.value("--workspace"), epRun.value("-w")+epRun.value("--workspace"); w != want {
		t.Errorf("the sandbox's workspace is %q, the Dockerfile's %q", w, want)
	}
	if s, _ := env(r.sandbox, "COWFS_SOCKET_DIR"); s != d.env["COWFS_SOCKET_DIR"] {
		t.Errorf("the sandbox's COWFS_SOCKET_DIR is %q, the Dockerfile's %q", s, d.env["COWFS_SOCKET_DIR"])
	}
	if s, _ := env(r.sandbox, "COWFS_STATE_DIR"); !slices.Contains(d.volumes, s) {
		t.Errorf("the sandbox's COWFS_STATE_DIR %q is not the Dockerfile's state volume %v", s, d.volumes)
	}
}

// TestCowfsCommandLines: every cowfs command line of the recipe — the
// containers' and those of its README — names commands and flags the
// built cowfs has, and 'kubectl exec -c NAME' names a container of the
// sandbox.
func TestCowfsCommandLines(t *testing.T) {
	r := load(t)
	checked := 0
	for _, c := range containers(r.pod) {
		var lines [][]string
		if a := argv(c); len(a) > 0 && a[0] == "cowfs" {
			lines = append(lines, a[1:])
		}
		if s, ok := script(c); ok {
			lines = append(lines, cowfsWords(shellCommands(s))...)
		}
		for _, words := range lines {
			checked++
			if _, err := resolve(t, words); err != nil {
				t.Errorf("container %s: %q: %v", c.Name, "cowfs "+strings.Join(words, " "), err)
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(recipeDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range containers(r.pod) {
		names[c.Name] = true
	}
	for _, block := range codeBlocks(string(readme)) {
		for _, cmd := range shellCommands(block) {
			if len(cmd) > 1 && cmd[0] == "kubectl" && cmd[1] == "exec" {
				if i := slices.Index(cmd, "-c"); i > 0 && i+1 < len(cmd) && !names[cmd[i+1]] {
					t.Errorf("README.md: %q: the sandbox Pod has no container %s", strings.Join(cmd, " "), cmd[i+1])
				}
			}
		}
		for _, words := range cowfsWords(shellCommands(block)) {
			checked++
			if _, err := resolve(t, words); err != nil {
				t.Errorf("README.md: %q: %v", "cowfs "+strings.Join(words, " "), err)
			}
		}
	}
	if checked < 5 {
		t.Errorf("only %d cowfs command lines found in the recipe: the extraction is broken", checked)
	}
}

var fence = regexp.MustCompile("(?ms)^```[a-z]*\n(.*?)^```")

// codeBlocks returns the fenced code blocks of a Markdown text.
func codeBlocks(md string) []string {
	var out []string
	for _, m := range fence.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}
