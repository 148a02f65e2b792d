// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fuse

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A server's /dev/fuse descriptor is close-on-exec, however it was
// mounted: a child the file system starts (or any program it execs)
// that kept it could read the kernel's requests and answer them in the
// file system's place.
func TestMountCloseOnExec(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts MountOptions
	}{
		{"DirectMountStrict", MountOptions{DirectMountStrict: true}},
		{"fusermount", MountOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.DirectMountStrict && os.Geteuid() != 0 {
				t.Skip("a direct mount needs root")
			}
			mnt := t.TempDir()
			srv, err := NewServer(NewDefaultRawFileSystem(), mnt, &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve()
			defer srv.Unmount()
			if err := srv.WaitMount(); err != nil {
				t.Fatal(err)
			}

			held := devFuseFds(t)
			if len(held) == 0 {
				t.Fatal("the server holds no /dev/fuse descriptor")
			}
			for _, fd := range held {
				flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
				if err != nil {
					t.Fatal(err)
				}
				if flags&unix.FD_CLOEXEC == 0 {
					t.Errorf("descriptor %d (/dev/fuse) is not close-on-exec", fd)
				}
			}

			// What a child really gets.
			out, err := exec.Command("sh", "-c", "exec ls -l /proc/self/fd").CombinedOutput()
			if err != nil {
				t.Fatalf("ls: %v: %s", err, out)
			}
			if strings.Contains(string(out), "/dev/fuse") {
				t.Errorf("a child inherited /dev/fuse:\n%s", out)
			}
		})
	}
}

// devFuseFds lists this process's descriptors that are /dev/fuse.
func devFuseFds(t *testing.T) []int {
	const dir = "/proc/self/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == "/dev/fuse" {
			if fd, err := strconv.Atoi(e.Name()); err == nil {
				fds = append(fds, fd)
			}
		}
	}
	return fds
}
