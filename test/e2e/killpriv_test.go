package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// cowfs clears set-user-ID and set-group-ID bits itself when an
// unprivileged process writes or truncates (it takes that job from the
// kernel, CAP_HANDLE_KILLPRIV_V2, to spare a round trip per write), and
// keeps them when root writes.
func TestSetIDBitsCleared(t *testing.T) {
	w := newWorkspace(t)
	// Let nobody reach the workspace.
	for p := w.dir; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	files := map[string]os.FileMode{
		"suid-write": 0o755 | os.ModeSetuid | os.ModeSetgid,
		"suid-trunc": 0o755 | os.ModeSetuid | os.ModeSetgid,
		"sgid-nox":   0o644 | os.ModeSetgid, // group may not execute: the bit marks locking, and stays
		// ... unless the writer is not in the file's group.
		"sgid-nox-other": 0o644 | os.ModeSetgid,
		"root-write":     0o755 | os.ModeSetuid | os.ModeSetgid,
	}
	for name, mode := range files {
		p := filepath.Join(w.dir, name)
		os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644)
		gid := 65534
		if name == "sgid-nox-other" {
			gid = 4321
		}
		os.Chown(p, 65534, gid)
		os.Chmod(p, mode)
	}
	w.mount()
	w.cowfs("turn", "begin")

	asNobody := func(script string) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = w.mnt
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("as nobody: %s: %v: %s", script, err, out)
		}
	}
	asNobody("echo more >> suid-write; echo more >> sgid-nox; echo more >> sgid-nox-other; truncate -s 1 suid-trunc")
	w.sh("echo more >> root-write")
	w.cowfs("turn", "end")

	want := map[string]os.FileMode{
		"suid-write":     0o755,
		"suid-trunc":     0o755,
		"sgid-nox":       0o644 | os.ModeSetgid,
		"sgid-nox-other": 0o644,
		"root-write":     0o755 | os.ModeSetuid | os.ModeSetgid,
	}
	for name, mode := range want {
		fi, err := os.Stat(w.path(name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid); got != mode {
			t.Errorf("%s: mode %v, want %v", name, got, mode)
		}
	}
	// And a rollback puts the bits back with the content.
	w.rollback("1")
	fi, _ := os.Stat(w.path("suid-write"))
	if fi.Mode()&os.ModeSetuid == 0 {
		t.Errorf("after rollback suid-write is %v", fi.Mode())
	}
}
