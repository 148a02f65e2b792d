package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/test/testenv"
)

// cowfs run mounts the workspace nosuid and nodev unless asked: a
// root-owned set-user-ID program in the workspace does not make the
// command, dropped to nobody, root, and a device node in it cannot be
// opened, by root either. --allow-suid and --allow-dev lift each.
func TestRunNosuidNodev(t *testing.T) {
	setpriv := testenv.NeedTool(t, "setpriv")
	w := newWorkspace(t)
	// A set-user-ID root copy of id, which prints its effective uid,
	// and /dev/null's device number: what the workspace could hold.
	id, err := exec.LookPath("id")
	if err != nil {
		testenv.Skip(t, "no id program to copy")
	}
	b, err := os.ReadFile(id)
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(w.dir, "suid-id")
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(w.dir, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(w.dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Flags&(unix.ST_NOSUID|unix.ST_NODEV) != 0 {
		testenv.Skip(t, "the test's temporary directory is on a nosuid or nodev filesystem: the opt-outs cannot be seen")
	}

	script := `awk -v ws="$PWD" '$5 == ws { print $6 }' /proc/self/mountinfo
` + setpriv + ` --reuid ` + strconv.Itoa(nobody) + ` --regid ` + strconv.Itoa(nobody) + ` --clear-groups ./suid-id -u
if cat null; then echo dev opens; else echo dev refused; fi`
	for _, tc := range []struct {
		name         string
		flags        []string
		nosuid       bool
		nodev        bool
		euid, device string
	}{
		{"default", nil, true, true, strconv.Itoa(nobody), "dev refused"},
		{"allow-suid", []string{"--allow-suid"}, false, true, "0", "dev refused"},
		{"allow-dev", []string{"--allow-dev"}, true, false, strconv.Itoa(nobody), "dev opens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := w.start(script, tc.flags...)
			r.stdin.Close()
			var out []string
			for r.lines.Scan() {
				out = append(out, r.lines.Text())
			}
			if code := r.wait(); code != 0 || len(out) != 3 {
				t.Fatalf("exit %d, output %q: %s", code, out, r.stderr.String())
			}
			opts := strings.Split(out[0], ",")
			if has(opts, "nosuid") != tc.nosuid || has(opts, "nodev") != tc.nodev {
				t.Errorf("the view is mounted %s, want nosuid %v, nodev %v", out[0], tc.nosuid, tc.nodev)
			}
			if out[1] != tc.euid {
				t.Errorf("a set-user-ID root program run by uid %d: euid %s, want %s", nobody, out[1], tc.euid)
			}
			if out[2] != tc.device {
				t.Errorf("opening a device node as root: %q, want %q", out[2], tc.device)
			}
			if tc.nodev && !strings.Contains(r.stderr.String(), "Permission denied") {
				t.Errorf("a device node on a nodev view: want EACCES, got %q", r.stderr.String())
			}
		})
	}
}

func has(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
