package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// # The racer
//
// The racer is the attacker of the race tests: the test binary,
// re-executed as uid 65534, doing on request what that user may do in
// a directory it can write — exchange two names with
// renameat2(RENAME_EXCHANGE), hard-link or symlink — and, in a loop,
// exchanging names as fast as it can from the moment a rollback shows
// itself (inotify IN_ATTRIB on the racer's own files, which the
// rollback chmods back) until told to stop.

const racerRole = "racer"

// racerRequest is one line the test sends to the racer; the racer
// answers each with one racerReply line.
type racerRequest struct {
	// Op is exchange (Args: two paths), link (old, new), symlink
	// (target, path), loop (a directory to watch for IN_ATTRIB, or ""
	// to start at once, then pairs of paths to exchange; the reply says
	// the watch is set) or stop (ends a loop; the reply counts the
	// exchanges it made).
	Op   string   `json:"op"`
	Args []string `json:"args,omitempty"`
}

type racerReply struct {
	Err string `json:"err,omitempty"`
	N   int    `json:"n,omitempty"` // exchanges a loop made
}

func racerMain(in io.Reader, out io.Writer) int {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	enc := json.NewEncoder(out)
	reply := func(err error, n int) {
		r := racerReply{N: n}
		if err != nil {
			r.Err = err.Error()
		}
		enc.Encode(r)
	}
	for line := range lines {
		var req racerRequest
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			reply(err, 0)
			continue
		}
		a := append(req.Args, "", "")
		switch req.Op {
		case "exchange":
			reply(unix.Renameat2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.RENAME_EXCHANGE), 0)
		case "link":
			reply(os.Link(a[0], a[1]), 0)
		case "symlink":
			reply(os.Symlink(a[0], a[1]), 0)
		case "loop":
			if len(req.Args) < 3 || len(req.Args)%2 != 1 {
				reply(fmt.Errorf("loop: want a directory and pairs of paths"), 0)
				continue
			}
			var stop atomic.Bool
			done := make(chan int)
			watch, err := watchAttrib(req.Args[0])
			if err != nil {
				reply(err, 0)
				continue
			}
			go func() { done <- exchangeLoop(watch, req.Args[1:], &stop) }()
			reply(nil, 0)
			for line := range lines {
				var r racerRequest
				if json.Unmarshal([]byte(line), &r) == nil && r.Op == "stop" {
					break
				}
			}
			stop.Store(true)
			reply(nil, <-done)
		default:
			reply(fmt.Errorf("unknown op %q", req.Op), 0)
		}
	}
	return 0
}

// watchAttrib returns an inotify descriptor that reports attribute
// changes of dir's entries, or -1 for dir "".
func watchAttrib(dir string) (int, error) {
	if dir == "" {
		return -1, nil
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return -1, err
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_ATTRIB); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("inotify %s: %w", dir, err)
	}
	return fd, nil
}

// exchangeLoop waits for an event on watch (unless it is -1), then
// exchanges each pair of paths in turn, without pause, until stop; it
// returns how many exchanges succeeded.
func exchangeLoop(watch int, pairs []string, stop *atomic.Bool) int {
	runtime.LockOSThread()
	if watch >= 0 {
		defer unix.Close(watch)
		buf := make([]byte, 4096)
		for !stop.Load() {
			pfd := []unix.PollFd{{Fd: int32(watch), Events: unix.POLLIN}}
			unix.Poll(pfd, 100)
			if n, _ := unix.Read(watch, buf); n > 0 {
				break
			}
		}
	}
	n := 0
	for !stop.Load() {
		for i := 0; i+1 < len(pairs); i += 2 {
			if unix.Renameat2(unix.AT_FDCWD, pairs[i], unix.AT_FDCWD, pairs[i+1], unix.RENAME_EXCHANGE) == nil {
				n++
			}
		}
	}
	return n
}

// racer is the test's end of a racer process.
type racer struct {
	t   testing.TB
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
	mu  sync.Mutex
}

// startRacer starts the racer from bin (roleBinary) as uid and gid
// nobody; it ends with the test.
func startRacer(t testing.TB, bin string) *racer {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), roleEnv+"="+racerRole)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &racer{t: t, cmd: cmd, in: in, out: json.NewDecoder(out)}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return r
}

// do sends one request and returns the racer's answer.
func (r *racer) do(op string, args ...string) racerReply {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(racerRequest{Op: op, Args: args})
	var rep racerReply
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		rep.Err = "racer gone: " + err.Error()
		return rep
	}
	if err := r.out.Decode(&rep); err != nil {
		rep.Err = "racer gone: " + err.Error()
	}
	return rep
}

// must is do, failing the test if the racer could not.
func (r *racer) must(op string, args ...string) racerReply {
	r.t.Helper()
	rep := r.do(op, args...)
	if rep.Err != "" {
		r.t.Fatalf("racer %s %q: %s", op, args, rep.Err)
	}
	return rep
}
