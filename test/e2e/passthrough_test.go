package e2e

import (
	"bufio"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

// Files a turn (or step) creates are read and written by the kernel
// itself (FUSE passthrough): the daemon sees their creation, not their
// writes. These tests check that it does not see the writes, that the
// same file can be opened again while it is written, and that a process
// still writing one when the turn ends — with write(2) or through a
// shared mapping — writes bytes the next turn's rollback takes back.

// ptHolder is a python3 process that creates and keeps one file open,
// driven line by line on its stdin; it answers "ok" or "err ...".
//
//	create           open(O_CREAT|O_RDWR) the file
//	write OFF TEXT   pwrite TEXT at OFF
//	map SIZE         ftruncate to SIZE, map it shared, close the descriptor
//	poke OFF TEXT    write TEXT into the mapping at OFF (no msync)
//	head             "ok" and the first 16 bytes (mapping, else descriptor), in hex
type ptHolder struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

const ptHolderScript = `
import mmap, os, sys
path, fd, m = sys.argv[1], -1, None
for line in sys.stdin:
    cmd = line.split()
    try:
        if cmd[0] == "create":
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
        elif cmd[0] == "write":
            os.pwrite(fd, cmd[2].encode(), int(cmd[1]))
        elif cmd[0] == "map":
            os.ftruncate(fd, int(cmd[1]))
            m = mmap.mmap(fd, int(cmd[1]), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            os.close(fd)
        elif cmd[0] == "poke":
            off, b = int(cmd[1]), cmd[2].encode()
            m[off:off + len(b)] = b
        elif cmd[0] == "head":
            print("ok " + (m[:16] if m else os.pread(fd, 16, 0)).hex(), flush=True)
            continue
        print("ok", flush=True)
    except OSError as e:
        print("err " + str(e), flush=True)
`

func startPtHolder(t *testing.T, path string) *ptHolder {
	t.Helper()
	testenv.NeedTool(t, "python3")
	cmd := exec.Command("python3", "-c", ptHolderScript, path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &ptHolder{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	// Registered after the workspace, so it runs first: the mount can
	// then be unmounted.
	t.Cleanup(h.stop)
	return h
}

// do sends one command and fails the test unless it succeeded.
func (h *ptHolder) do(cmd string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, cmd+"\n"); err != nil {
		h.t.Fatalf("ptHolder %q: %v", cmd, err)
	}
	line, err := h.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ok" {
		h.t.Fatalf("ptHolder %q: %q %v", cmd, line, err)
	}
}

// head returns the file's first 16 bytes as the holder sees them: the
// backing file's, whatever a mount's page cache holds.
func (h *ptHolder) head() string {
	h.t.Helper()
	if _, err := io.WriteString(h.in, "head\n"); err != nil {
		h.t.Fatalf("holder head: %v", err)
	}
	line, err := h.out.ReadString('\n')
	hx, ok := strings.CutPrefix(strings.TrimSpace(line), "ok ")
	b, herr := hex.DecodeString(hx)
	if err != nil || !ok || herr != nil {
		h.t.Fatalf("holder head: %q %v", line, err)
	}
	return string(b)
}

func (h *ptHolder) stop() {
	h.in.Close()
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
}

func (w *workspace) read(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.path(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// TestPassthroughNewFileWrites: writing a file the turn created sends
// the daemon no WRITE with --passthrough; without it, every write
// reaches it.
func TestPassthroughNewFileWrites(t *testing.T) {
	for _, off := range []bool{false, true} {
		name := "on"
		if off {
			name = "off"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t)
			if off {
				w.mount()
			} else {
				w.mount("--passthrough")
			}
			w.cowfs("turn", "begin")
			w.sh("dd if=/dev/urandom of=new bs=64k count=64 conv=fsync 2>/dev/null; echo more >> new")
			writes := w.status().FUSERequests["WRITE"]
			if off && writes == 0 || !off && writes != 0 {
				t.Errorf("passthrough %s: the daemon served %d WRITEs", name, writes)
			}
			w.cowfs("turn", "end")
			w.cowfs("rollback", "1")
			if _, err := os.Stat(w.path("new")); !os.IsNotExist(err) {
				t.Errorf("new after rolling back the turn that created it: %v", err)
			}
		})
	}
}

// TestPassthroughOpenAgain: a file held open by its creator can be
// opened, read and written again meanwhile (the kernel refuses, with
// EIO, an open not in the mode of the inode's other opens).
func TestPassthroughOpenAgain(t *testing.T) {
	w := newWorkspace(t)
	w.mount("--passthrough")
	w.cowfs("turn", "begin")
	h := startPtHolder(t, w.path("f"))
	h.do("create")
	h.do("write 0 first")
	if got := w.read("f"); got != "first" {
		t.Fatalf("f read while its creator holds it: %q", got)
	}
	w.sh("printf SECOND > f; echo tail >> f")
	h.do("write 0 third")
	if got := w.read("f"); got != "thirdDtail\n" {
		t.Errorf("f: %q", got)
	}
	w.cowfs("turn", "end")
}

// TestPassthroughHeldAcrossTurn: a process that created a file in turn
// 1 keeps it open and writes it in turn 2, with write(2) or through a
// shared mapping made in turn 1. Rolling turn 2 back gives the file its
// content at the end of turn 1, and turn 2 lists it as modified.
func TestPassthroughHeldAcrossTurn(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		name := "write"
		if mapped {
			name = "mmap"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t)
			w.mount("--passthrough")
			w.cowfs("turn", "begin")
			h := startPtHolder(t, w.path("live"))
			h.do("create")
			h.do("write 0 turn-one")
			if mapped {
				h.do("map 4096")
				h.do("poke 9 mapped-one")
			}
			w.cowfs("turn", "end")
			want := w.read("live")
			w.cowfs("turn", "begin")
			if mapped {
				h.do("poke 0 TURN-TWO")
			} else {
				h.do("write 0 TURN-TWO")
				h.do("write 100 beyond")
			}
			w.cowfs("turn", "end")
			if got := w.read("live"); got == want {
				t.Fatalf("turn 2 changed nothing: %q", got)
			}
			d := w.turn("2")
			if len(d.Changes) != 1 || string(d.Changes[0].Path) != "live" {
				t.Errorf("turn 2 lists %+v, want live", d.Changes)
			}
			w.cowfs("rollback", "2")
			if got := w.read("live"); got != want {
				t.Errorf("live after rolling back turn 2: %q, want %q", got, want)
			}
			// The ptHolder writes on, in turn 3, over the restored file.
			w.cowfs("turn", "begin")
			if mapped {
				h.do("poke 0 turn3")
			} else {
				h.do("write 0 turn3")
			}
			w.cowfs("turn", "end")
			w.cowfs("rollback", "3")
			if got := w.read("live"); got != want {
				t.Errorf("live after rolling back turn 3: %q, want %q", got, want)
			}
		})
	}
}

// TestPassthroughWriterOutlivesDaemon: a process holding a file it
// created in turn 1 — open, and mapped — goes on writing it after the
// daemon is killed, since the kernel writes the backing file itself.
// The next daemon finds it (through the dead mount) and captures the
// file at every boundary while it is held: what it writes in turn 2
// rolls back.
func TestPassthroughWriterOutlivesDaemon(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		name := "write"
		if mapped {
			name = "mmap"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t)
			w.mount("--passthrough")
			w.cowfs("turn", "begin")
			h := startPtHolder(t, w.path("live"))
			h.do("create")
			h.do("write 0 turn-one")
			if mapped {
				h.do("map 4096")
			}
			w.killDaemon(w.status().Pid)
			if mapped {
				h.do("poke 0 crashed")
			} else {
				h.do("write 0 crashed")
			}
			if _, errOut, code := w.run("mount", "--background", w.dir); code != 0 {
				t.Fatalf("remount: exit %d: %s", code, errOut)
			}
			w.pids = append(w.pids, w.status().Pid)
			w.cowfs("turn", "end")
			want := h.head()
			if !strings.HasPrefix(want, "crashed") {
				t.Fatalf("live after the crash: %q", want)
			}
			w.cowfs("turn", "begin")
			if mapped {
				h.do("poke 0 TURN-TWO")
			} else {
				h.do("write 0 TURN-TWO")
			}
			w.cowfs("turn", "end")
			w.cowfs("rollback", "2")
			if got := h.head(); got != want {
				t.Errorf("live after rolling back turn 2: %q, want %q", got, want)
			}
			if got := w.read("live"); !strings.HasPrefix(got, want) {
				t.Errorf("live read through the mount after rolling back turn 2: %q, want %q first", got, want)
			}
		})
	}
}
