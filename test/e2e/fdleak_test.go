package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// No descriptor of the daemon or of cowfs run reaches a program they
// start. The command cowfs run runs is untrusted and often drops to
// another uid: with /dev/fuse it could read root's FUSE requests and
// answer them (forge files root then trusts); with the backing
// directory's root, the journal or the control socket it could reach
// what the mount and the socket's permissions keep from it. Nor does a
// descriptor whoever started cowfs held reach the command.

// inheritSecret makes cowfs mount and cowfs run inherit a descriptor of
// a file outside the workspace, as from a careless parent. It sits at
// descriptor 10, above those cowfs hands its own children (3), which
// would replace it there.
func inheritSecret(t *testing.T, w *workspace) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(w.dir), "harness-secret")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w.inherit = make([]*os.File, 8)
	w.inherit[7] = f
	return p
}

// fdLine is a line of ls -l /proc/self/fd: "... N -> TARGET".
var fdLine = regexp.MustCompile(`(\d+) -> (.*)$`)

// ownListing is the directory ls -l /proc/self/fd opens to list itself.
var ownListing = regexp.MustCompile(`^/proc/\d+/fd$`)

// The command cowfs run runs holds standard input, output and error
// and nothing else, as root and after dropping to nobody: no /dev/fuse,
// nothing of the daemon's, nothing cowfs run inherited.
func TestRunCommandHoldsOnlyStdio(t *testing.T) {
	setpriv := testenv.NeedTool(t, "setpriv")
	w := newWorkspace(t)
	secret := inheritSecret(t, w)
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"root", []string{"ls", "-l", "/proc/self/fd"}},
		{"nobody", []string{setpriv, "--reuid", strconv.Itoa(nobody), "--regid", strconv.Itoa(nobody),
			"--clear-groups", "ls", "-l", "/proc/self/fd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := w.startCommand(nil, tc.argv...)
			r.stdin.Close()
			var listing []string
			for r.lines.Scan() {
				listing = append(listing, r.lines.Text())
			}
			if code := r.wait(); code != 0 {
				t.Fatalf("exit %d: %s", code, r.stderr.String())
			}
			fds := 0
			for _, l := range listing {
				m := fdLine.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				fds++
				fd, _ := strconv.Atoi(m[1])
				if fd > 2 && !ownListing.MatchString(m[2]) {
					t.Errorf("the command holds descriptor %d: %s", fd, m[2])
				}
				if m[2] == "/dev/fuse" || m[2] == secret {
					t.Errorf("the command can read and write %s through descriptor %d", m[2], fd)
				}
			}
			if fds < 3 {
				t.Fatalf("no listing of the command's descriptors: %q", listing)
			}
		})
	}
}

// Every descriptor a running daemon holds, beyond standard input,
// output and error, is close-on-exec: no program it or a library in it
// starts inherits one. Started in the background, it holds no
// descriptor its starter had.
func TestDaemonDescriptorsCloseOnExec(t *testing.T) {
	w := newWorkspace(t)
	secret := inheritSecret(t, w)
	w.seed(map[string]string{"f": "before\n"})
	w.mount()
	// Open the journal's log and packs and the daemon's kept
	// descriptors: a turn that overwrites a file.
	w.cowfs("turn", "begin")
	w.sh("echo after > f; mkdir d; echo g > d/g")
	w.cowfs("turn", "end")
	held := descriptors(t, w.pids[0])
	wantCloseOnExec(t, "the daemon", held)
	if fd, ok := holds(held, secret); ok {
		t.Errorf("the daemon holds its starter's %s (descriptor %d)", secret, fd)
	}
}

// The same for cowfs run's two processes while its command runs: the
// one in the host's namespace and the sandbox that serves the mount.
func TestRunDescriptorsCloseOnExec(t *testing.T) {
	w := newWorkspace(t)
	inheritSecret(t, w)
	r := w.start(`echo x > f; echo ready; read x`)
	r.expect("ready")
	outer := r.cmd.Process.Pid
	kids := childrenOf(outer)
	if len(kids) != 1 {
		t.Fatalf("cowfs run's children: %v, want the sandbox", kids)
	}
	wantCloseOnExec(t, "cowfs run", descriptors(t, outer))
	wantCloseOnExec(t, "cowfs run's sandbox", descriptors(t, kids[0]))
	r.send("")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d: %s", code, r.stderr.String())
	}
}

// descriptor is one open descriptor of a process.
type descriptor struct {
	fd     int
	flags  uint64 // the open flags, from fdinfo
	target string
}

// descriptors lists the open descriptors of process pid.
func descriptors(t *testing.T, pid int) []descriptor {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ds []descriptor
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		info, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		d := descriptor{fd: fd, flags: ^uint64(0)}
		for _, l := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(l, "flags:"); ok {
				// Octal, as the kernel prints it.
				if d.flags, err = strconv.ParseUint(strings.TrimSpace(v), 8, 64); err != nil {
					t.Fatalf("%s/%d: flags %q", dir, fd, v)
				}
			}
		}
		d.target, _ = os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
		ds = append(ds, d)
	}
	if len(ds) < 3 {
		t.Fatalf("%s: %d descriptors", dir, len(ds))
	}
	return ds
}

// oCloexec is O_CLOEXEC as fdinfo's flags show it (02000000).
const oCloexec = 0o2000000

// wantCloseOnExec fails t for every descriptor beyond 0, 1 and 2 that
// is not close-on-exec.
func wantCloseOnExec(t *testing.T, who string, ds []descriptor) {
	t.Helper()
	for _, d := range ds {
		if d.fd > 2 && d.flags&oCloexec == 0 {
			t.Errorf("%s: descriptor %d (%s) is not close-on-exec (flags %#o)", who, d.fd, d.target, d.flags)
		}
	}
}

// holds reports whether one of ds is path.
func holds(ds []descriptor, path string) (int, bool) {
	for _, d := range ds {
		if d.target == path {
			return d.fd, true
		}
	}
	return 0, false
}
