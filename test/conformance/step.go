package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Who is the identity a step runs as.
type Who struct {
	Uid, Gid uint32
	Groups   []uint32 // supplementary groups
}

var (
	root   = Who{0, 0, nil}
	nobody = Who{65534, 65534, nil}
	alice  = Who{1001, 1001, nil}
	// member is uid 1002 with supplementary group 4321.
	member = Who{1002, 1002, []uint32{4321}}
)

// Op is one call a step makes. Paths are relative to the case's
// directory; Uid and Gid are chown's arguments (-1: unchanged).
type Op struct {
	Call  string   `json:"call"`
	Path  string   `json:"path,omitempty"`
	Path2 string   `json:"path2,omitempty"`
	Mode  uint32   `json:"mode,omitempty"`
	Flags int      `json:"flags,omitempty"`
	Uid   int      `json:"uid"`
	Gid   int      `json:"gid"`
	Dev   uint64   `json:"dev,omitempty"`
	Args  []string `json:"args,omitempty"`
}

// Step is a list of calls made by one process.
type Step struct {
	As    Who  `json:"as"`
	Umask int  `json:"umask"`
	Ops   []Op `json:"ops"`
}

// StepEnv is the environment variable that makes the test binary run a
// step (JSON) instead of its tests.
const StepEnv = "COWFS_CONFORMANCE_STEP"

// StepDirEnv names the directory the child runs its step in.
const StepDirEnv = "COWFS_CONFORMANCE_DIR"

// OtherEnv names a directory on another filesystem (for EXDEV), which
// "{other}" in a path stands for.
const OtherEnv = "COWFS_CONFORMANCE_OTHER"

// BackingEnv tells a step where the mount's backing directory is, as
// "MOUNTPOINT=BACKING": "chattr" acts there, since the mount refuses the
// ioctl that sets inode flags (it could not journal it).
const BackingEnv = "COWFS_CONFORMANCE_BACKING"

// backingPath is p, relative to the step's directory, as the backing
// directory holds it if the step runs in the mount.
func backingPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	mnt, back, ok := strings.Cut(os.Getenv(BackingEnv), "=")
	if rest, under := strings.CutPrefix(abs, mnt+"/"); ok && under {
		return filepath.Join(back, rest), nil
	}
	return abs, nil
}

// expand replaces "{other}" with the other filesystem's directory and
// "{long}" with a name one byte longer than NAME_MAX.
func expand(p string) string {
	p = strings.ReplaceAll(p, "{other}", os.Getenv(OtherEnv))
	return strings.ReplaceAll(p, "{long}", strings.Repeat("n", 256))
}

// RunStep runs step s as its identity in dir, in a child process
// started from bin (a copy of the test binary every user may run), and
// returns one line per call.
func RunStep(bin, dir string, s Step) ([]string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	// The child changes into dir itself, after exec: between fork and
	// exec the test's process cannot serve a FUSE request (the forking
	// thread holds its P with signals blocked, so a garbage
	// collection's stop-the-world waits for it), and a chdir into a
	// mount this process serves would wait for an answer for ever.
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), StepEnv+"="+string(b), StepDirEnv+"="+dir)
	groups := s.As.Groups
	if groups == nil {
		groups = []uint32{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: s.As.Uid, Gid: s.As.Gid, Groups: groups}}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("step as %d: %w: %s", s.As.Uid, err, stderr)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), nil
}

// Child runs the step in the environment, if there is one, printing a
// line per call, and exits; TestMain calls it first.
func Child() {
	v, ok := os.LookupEnv(StepEnv)
	if !ok {
		return
	}
	var s Step
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := os.Chdir(os.Getenv(StepDirEnv)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	unix.Umask(s.Umask)
	for _, op := range s.Ops {
		line := fmt.Sprintf("%s %s %s", op.Call, op.Path, op.Path2)
		op.Path, op.Path2 = expand(op.Path), expand(op.Path2)
		fmt.Printf("%s: %s\n", line, result(do(op)))
	}
	os.Exit(0)
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(syscall.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// do makes one call.
func do(op Op) error {
	p, p2 := op.Path, op.Path2
	switch op.Call {
	case "open":
		fd, err := unix.Open(p, op.Flags|unix.O_CLOEXEC, op.Mode)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "append": // open for appending and append a byte
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte{'a'})
		return err
	case "chattr": // Args: the flag (+i, -a, ...), set on the backing file
		b, err := backingPath(p)
		if err != nil {
			return err
		}
		if out, err := exec.Command("chattr", op.Args[0], b).CombinedOutput(); err != nil {
			return fmt.Errorf("chattr: %v: %s", err, out)
		}
		return nil
	case "write": // open for writing and write a byte
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte{'x'})
		return err
	case "mkdir":
		return unix.Mkdir(p, op.Mode)
	case "mknod":
		return unix.Mknod(p, op.Mode, int(op.Dev))
	case "unlink":
		return unix.Unlink(p)
	case "rmdir":
		return unix.Rmdir(p)
	case "rename":
		return unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, p2, uint(op.Flags))
	case "link":
		return unix.Linkat(unix.AT_FDCWD, p, unix.AT_FDCWD, p2, op.Flags)
	case "symlink": // p2 pointing to p
		return unix.Symlink(p, p2)
	case "chmod":
		return unix.Chmod(p, op.Mode)
	case "chown":
		return unix.Chown(p, op.Uid, op.Gid)
	case "lchown":
		return unix.Lchown(p, op.Uid, op.Gid)
	case "truncate":
		return unix.Truncate(p, int64(op.Mode))
	case "utime-now": // utimensat(NULL)
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, nil, 0)
	case "utime-set":
		ts := []unix.Timespec{{Sec: 1e9}, {Sec: 1e9}}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, 0)
	case "utime-omit-now": // atime now, mtime omitted
		ts := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_OMIT}}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, 0)
	case "stat":
		var st unix.Stat_t
		return unix.Lstat(p, &st)
	case "readlink":
		_, err := os.Readlink(p)
		if pe, ok := err.(*os.PathError); ok {
			return pe.Err
		}
		return err
	case "tmpfile": // an O_TMPFILE file in directory p, linked as p2
		fd, err := unix.Open(p, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, op.Mode)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, p2, unix.AT_SYMLINK_FOLLOW)
	case "setxattr": // Args: name, value
		return unix.Lsetxattr(p, op.Args[0], []byte(op.Args[1]), op.Flags)
	case "getxattr":
		_, err := unix.Lgetxattr(p, op.Args[0], make([]byte, 256))
		return err
	case "removexattr":
		return unix.Lremovexattr(p, op.Args[0])
	case "chmod-nofollow":
		return unix.Fchmodat(unix.AT_FDCWD, p, op.Mode, unix.AT_SYMLINK_NOFOLLOW)
	case "pwrite": // Uid bytes of 'x' at offset Gid
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Pwrite(fd, bytes.Repeat([]byte{'x'}, op.Uid), int64(op.Gid))
		return err
	case "fallocate": // mode Flags, offset Gid, length Uid
		fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fallocate(fd, uint32(op.Flags), int64(op.Gid), int64(op.Uid))
	case "seek": // SEEK_DATA and SEEK_HOLE from offset Gid
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		d, err := unix.Seek(fd, int64(op.Gid), unix.SEEK_DATA)
		h, herr := unix.Seek(fd, int64(op.Gid), unix.SEEK_HOLE)
		return fmt.Errorf("data %d %v, hole %d %v", d, err, h, herr)
	case "copy": // copy_file_range of all of p to the start of p2
		in, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(in)
		out, err := unix.Open(p2, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		defer unix.Close(out)
		var st unix.Stat_t
		unix.Fstat(in, &st)
		for left := int(st.Size); left > 0; {
			n, err := unix.CopyFileRange(in, nil, out, nil, left, 0)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			left -= n
		}
		return nil
	case "exec":
		out, err := exec.Command(op.Args[0], op.Args[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	return fmt.Errorf("unknown call %q", op.Call)
}
