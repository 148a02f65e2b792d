package e2e

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The person of the model test (model_test.go): a shell of uid nobody
// working in p/ beside the agent, through the mount during turns and
// between them, and behind it (in p/behind, directly in the backing
// directory) after rollbacks.

const (
	personDir    = "p"
	personBehind = "p/behind" // written behind the mount only
)

// files is the person's files: path → content.
type files map[string]string

func (f files) clone() files { return maps.Clone(f) }

// but returns the person's files as they are in then, but for those
// written behind the mount, which are as in f: what a forced rollback
// (or the unrevert of one) leaves.
func (f files) but(then files) files {
	out := files{}
	for p, c := range then {
		if !strings.HasPrefix(p, personBehind+"/") {
			out[p] = c
		}
	}
	for p, c := range f {
		if strings.HasPrefix(p, personBehind+"/") {
			out[p] = c
		}
	}
	return out
}

// persons reports whether rel is the person's.
func (m *model) persons(rel string) bool {
	return rel == personDir || strings.HasPrefix(rel, personDir+"/")
}

// seedPerson makes p/ (the person's, uid nobody) with a few files, and
// p/behind, before the mount.
func (m *model) seedPerson() {
	w := m.w
	m.person = files{}
	seed := map[string]string{}
	for i := range 3 {
		seed[fmt.Sprintf("%s/s%d", personDir, i)] = m.content()
	}
	seed[personBehind+"/b0"] = m.content()
	w.seed(seed)
	for p, c := range seed {
		m.person[p] = c
		if !strings.HasPrefix(p, personBehind+"/") {
			os.Chown(filepath.Join(w.dir, p), nobody, nobody)
		}
	}
	os.Chown(filepath.Join(w.dir, personDir), nobody, nobody)
	for p := filepath.Dir(w.dir); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // let nobody reach the view
	}
}

// startPerson starts the person's shell (its working directory is not
// in the mount, which a restart unmounts).
func (m *model) startPerson() {
	m.personSh = startShell(m.t, "/", ptr(uint32(nobody)))
}

// personOp makes one random change of the person's through the mount.
// Files written behind the mount since the last rescan are left alone:
// the kernel's cached size of them is stale until the mount sees them,
// as natively with a cache timeout.
func (m *model) personOp() {
	var mine []string
	for p := range m.person {
		if !strings.HasPrefix(p, personBehind+"/") && !m.dirty[p] {
			mine = append(mine, p)
		}
	}
	sort.Strings(mine)
	k := m.rng.IntN(5)
	if len(mine) == 0 {
		k = 0
	}
	var desc, script string
	c := m.content()
	// One line for the shell: printf turns \n back into newlines (the
	// content is letters and newlines only).
	lit := strings.ReplaceAll(c, "\n", `\n`)
	switch k {
	case 0: // create
		m.nb++
		f := fmt.Sprintf("%s/n%d", personDir, m.nb)
		desc, script = "create "+f, fmt.Sprintf("printf %%b '%s' > %s", lit, f)
		m.person[f] = c
	case 1: // overwrite
		f := pick(m.rng, mine)
		desc, script = "overwrite "+f, fmt.Sprintf("printf %%b '%s' > %s", lit, f)
		m.person[f] = c
	case 2: // append
		f := pick(m.rng, mine)
		desc, script = "append "+f, fmt.Sprintf("printf %%b '%s' >> %s", lit, f)
		m.person[f] += c
	case 3: // sed -i: a new file renamed over the old
		f := pick(m.rng, mine)
		desc, script = "sed -i "+f, "sed -i s/a/A/g "+f
		m.person[f] = strings.ReplaceAll(m.person[f], "a", "A")
	case 4: // rm
		f := pick(m.rng, mine)
		desc, script = "rm "+f, "rm "+f
		delete(m.person, f)
	}
	m.logf("person: %s", desc)
	if err := m.personSh.try(fmt.Sprintf("(cd '%s' && %s)", m.w.mnt, script)); err != nil {
		m.t.Fatalf("the person's %s: %v", desc, err)
	}
}

// behind makes one change of the person's behind the mount, in
// p/behind: a file created or appended to.
func (m *model) behind() {
	var there []string
	for p := range m.person {
		if strings.HasPrefix(p, personBehind+"/") {
			there = append(there, p)
		}
	}
	sort.Strings(there)
	c := m.content()
	var f string
	if len(there) == 0 || m.rng.IntN(2) == 0 {
		m.nb++
		f = fmt.Sprintf("%s/b%d", personBehind, m.nb)
		m.logf("person, behind the mount: create %s", f)
		m.person[f] = c
	} else {
		f = pick(m.rng, there)
		m.logf("person, behind the mount: append %s", f)
		m.person[f] += c
	}
	fh, err := os.OpenFile(filepath.Join(m.w.dir, f), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil {
		_, err = fh.WriteString(c)
		fh.Close()
	}
	if err != nil {
		m.t.Fatalf("writing %s behind the mount: %v", f, err)
	}
	if m.dirty == nil {
		m.dirty = map[string]bool{}
	}
	m.dirty[f] = true
}

// checkPerson compares the person's files, read in the backing
// directory, with the model.
func (m *model) checkPerson(what string) {
	got := files{}
	root := m.w.dir
	filepath.WalkDir(filepath.Join(root, personDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		b, _ := os.ReadFile(p)
		got[rel] = string(b)
		return nil
	})
	var diffs []string
	for p, c := range m.person {
		switch g, ok := got[p]; {
		case !ok:
			diffs = append(diffs, "missing "+p)
		case g != c:
			diffs = append(diffs, fmt.Sprintf("differs %s: %d bytes, want %d", p, len(g), len(c)))
		}
	}
	for p := range got {
		if _, ok := m.person[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		m.t.Fatalf("%s: the person's files differ:\n  %s", what, strings.Join(diffs, "\n  "))
	}
}

// agentSnapshot is the workspace through the mount, but the person's.
func (m *model) agentSnapshot() tree {
	m.t.Helper()
	return snapshotSkipping(m.t, m.w.mnt, personDir)
}

// sameAgentTree fails the test if the workspace, but the person's, is
// not want.
func (m *model) sameAgentTree(want tree, what string) {
	m.t.Helper()
	if d := diff(want, m.agentSnapshot()); len(d) > 0 {
		if len(d) > 30 {
			d = append(d[:30], fmt.Sprintf("… and %d more", len(d)-30))
		}
		m.t.Fatalf("%s: the tree differs:\n  %s", what, strings.Join(d, "\n  "))
	}
}
