// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fs

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
)

// blockingNode answers LOOKUP of names starting with "slow" only once
// release is closed, and every other LOOKUP at once.
type blockingNode struct {
	Inode
	entered chan string
	release chan struct{}
}

var _ = (NodeLookuper)((*blockingNode)(nil))

func (n *blockingNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*Inode, syscall.Errno) {
	if strings.HasPrefix(name, "slow") {
		n.entered <- name
		<-n.release
	}
	return nil, syscall.ENOENT
}

// With ServeInline, requests blocked in the file system do not hold up
// the ones after them: each hands the reading over to a new goroutine.
func TestServeInlineHandsOff(t *testing.T) {
	root := &blockingNode{entered: make(chan string, 10), release: make(chan struct{})}
	opts := &Options{}
	opts.ServeInline = true
	dir, _ := testMount(t, root, opts)
	released := false
	defer func() {
		if !released {
			close(root.release)
		}
	}()

	lstat := func(name string) chan error {
		done := make(chan error, 1)
		go func() {
			var st syscall.Stat_t
			done <- syscall.Lstat(filepath.Join(dir, name), &st)
		}()
		return done
	}
	wait := func(what string, ch chan error) error {
		select {
		case err := <-ch:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer: the mount stalls", what)
			return nil
		}
	}

	// Two requests block, one after the other: each must have handed
	// the reading over for the next to arrive.
	var slow []chan error
	for _, name := range []string{"slow1", "slow2"} {
		slow = append(slow, lstat(name))
		select {
		case <-root.entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("lookup of %s never arrived", name)
		}
	}
	if err := wait("fast lookup", lstat("fast")); err != syscall.ENOENT {
		t.Fatalf("fast lookup: %v, want ENOENT", err)
	}
	close(root.release)
	released = true
	for i, ch := range slow {
		if err := wait("slow lookup", ch); err != syscall.ENOENT {
			t.Fatalf("slow lookup %d: %v, want ENOENT", i, err)
		}
	}
	// And the mount goes on serving.
	for i := 0; i < 100; i++ {
		if err := wait("lookup", lstat("fast")); err != syscall.ENOENT {
			t.Fatalf("lookup: %v, want ENOENT", err)
		}
	}
}
