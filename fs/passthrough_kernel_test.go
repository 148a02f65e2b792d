package fs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	gofs "github.com/cowfs/cowfs/internal/_gofuse/fs"
	"github.com/cowfs/cowfs/internal/_gofuse/fuse"
	"github.com/cowfs/cowfs/test/testenv"
)

// declineOpens is go-fuse's loopback with opens declined, as Node.Open
// declines them without passthrough (the kernel then stops sending
// OPEN), while CREATE still answers with a handle the bridge gives its
// backing file (FUSE passthrough).
type declineOpens struct{ gofs.LoopbackNode }

func (n *declineOpens) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, syscall.ENOSYS
}

// TestPassthroughNeedsEveryOpen pins the kernel fact that makes
// passthrough answer every open (passthrough.go, docs/design.md
// "Nothing slips past"): passthrough only for the open that creates a
// file, with every other open unseen, would cost reads of old files
// nothing — but the kernel fails an unseen open of an inode that a
// passthrough open holds, so a second reader of a file still being
// written would get EIO. Once the passthrough open is closed, an
// unseen open works.
func TestPassthroughNeedsEveryOpen(t *testing.T) {
	testenv.NeedFUSE(t)
	dir := t.TempDir()
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	os.Mkdir(backing, 0o755)
	os.Mkdir(mnt, 0o755)
	root := &gofs.LoopbackRoot{Path: backing}
	root.NewNode = func(r *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
		return &declineOpens{gofs.LoopbackNode{RootData: r}}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		t.Fatal(err)
	}
	root.Dev = st.Dev
	root.RootNode = root.NewNode(root, nil, "", &st)
	srv, err := gofs.Mount(mnt, root.RootNode, &gofs.Options{MountOptions: fuse.MountOptions{DirectMountStrict: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})

	// The first open the kernel sends is declined: from then on
	// opens are unseen.
	os.WriteFile(filepath.Join(backing, "old"), []byte("old"), 0o644)
	openClose := func(p string) error {
		f, err := os.Open(p)
		if err == nil {
			f.Close()
		}
		return err
	}
	if err := openClose(filepath.Join(mnt, "old")); err != nil {
		t.Fatalf("open of a file: %v", err)
	}

	p := filepath.Join(mnt, "new")
	w, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := openClose(p); !errors.Is(err, syscall.EIO) {
		w.Close()
		t.Fatalf("an unseen open of a file a passthrough open holds: err %v, want EIO; if this kernel allows it, passthrough could be given to the creating open alone, with opens unseen", err)
	}
	w.Close()
	if err := openClose(p); err != nil {
		t.Fatalf("an unseen open after the passthrough open closed: %v", err)
	}
}
