package e2e

import (
	"strings"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// The bubblewrap recipe of docs/sandbox.md: cowfs run mounts the
// workspace, bwrap runs a bash script in it with nothing else writable,
// and a harness outside drives two turns through the control socket.
// Rolling back to before the first turn from outside restores the
// workspace exactly: contents, modes, inodes, times.
func TestBubblewrapRecipe(t *testing.T) {
	testenv.NeedTool(t, "bwrap")
	testenv.NeedTool(t, "bash")
	w := newWorkspace(t)
	w.seed(map[string]string{"keep.txt": "keep\n", "gone.txt": "gone\n", "src/main.c": "int main;\n"})
	// A first run makes cowfs's private directory, which changes the
	// root's times: the state the rollback must come back to is after it.
	if _, errOut, code := w.run("run", "--", "true"); code != 0 {
		t.Fatalf("cowfs run -- true: exit %d: %s", code, errOut)
	}
	before := withoutPrivate(snapshot(t, w.dir))

	// The agent: two rounds of edits, each when the harness says so.
	script := `set -e
echo ready
read go; echo edited >> keep.txt; rm gone.txt; echo one > new1.txt; mkdir -p lib; echo l > lib/l.c; chmod 600 src/main.c; echo done
read go; sed -i s/main/start/ src/main.c; rm new1.txt; mv keep.txt kept.txt; ln -s kept.txt link; echo done
read go`
	r := w.startCommand(nil, "bwrap",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--bind", w.dir, w.dir, "--chdir", w.dir,
		"--unshare-all", "--die-with-parent",
		"bash", "-c", script)
	r.expect("ready")
	for i := range 2 {
		w.cowfs("turn", "begin", "--id", "round-"+itoa(i+1))
		r.send("go")
		r.expect("done")
		w.cowfs("turn", "end")
	}
	if d := w.turn("round-2"); d.ChangedPaths < 4 {
		t.Errorf("round 2 recorded %d paths: %+v", d.ChangedPaths, d.Changes)
	}

	res := w.rollback("round-1")
	if res.Counts.Skipped != 0 || !res.Complete {
		t.Errorf("rollback from outside: %+v", res)
	}
	if d := diff(before, withoutPrivate(snapshot(t, w.dir))); len(d) > 0 {
		t.Errorf("after rolling back to before round 1, the workspace differs:\n%s", strings.Join(d, "\n"))
	}
	r.send("go")
	if code := r.wait(); code != 0 {
		t.Errorf("bwrap under cowfs run: exit %d: %s", code, r.stderr.String())
	}
}

// withoutPrivate drops cowfs's private directory from a snapshot of the
// backing directory, and the link its ".." gives the root.
func withoutPrivate(tr tree) tree {
	if _, ok := tr[".cowfs"]; ok {
		root := tr["."]
		root.Nlink--
		tr["."] = root
	}
	for p := range tr {
		if p == ".cowfs" || strings.HasPrefix(p, ".cowfs/") {
			delete(tr, p)
		}
	}
	return tr
}
