package e2e

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// entry is what a comparison checks of one path: type, permissions,
// owner, size, content, symlink target, mtime, and the inode itself
// (cowfs puts inodes back rather than copies, so even inode numbers and
// hard-link groups must match).
type entry struct {
	Mode   os.FileMode
	Uid    uint32
	Gid    uint32
	Size   int64
	Sum    [32]byte
	Target string
	Mtime  int64
	Ino    uint64
	Nlink  uint64
	Xattr  string
}

// tree is a snapshot of a directory: every path beneath it.
type tree map[string]entry

// snapshot walks root (through the mount) and records every path.
func snapshot(t testing.TB, root string) tree {
	t.Helper()
	return snapshotSkipping(t, root, "")
}

// snapshotSkipping is snapshot without the directory skip (relative to
// root) and what it holds.
func snapshotSkipping(t testing.TB, root, skip string) tree {
	t.Helper()
	tr := tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if skip != "" && rel == skip {
			return filepath.SkipDir
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		fi, _ := d.Info()
		e := entry{Mode: fi.Mode(), Uid: st.Uid, Gid: st.Gid, Mtime: st.Mtim.Nano(), Ino: st.Ino, Nlink: st.Nlink}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Size, e.Sum = int64(len(b)), sha256.Sum256(b)
		case fi.Mode()&os.ModeSymlink != 0:
			e.Target, _ = os.Readlink(p)
		}
		e.Xattr = xattrs(p)
		tr[rel] = e
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return tr
}

// xattrs lists a path's user xattrs and values.
func xattrs(p string) string {
	buf := make([]byte, 4096)
	n, err := syscall.Listxattr(p, buf)
	if err != nil || n == 0 {
		return ""
	}
	var out []string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		v := make([]byte, 4096)
		m, _ := syscall.Getxattr(p, name, v)
		out = append(out, name+"="+string(v[:max(m, 0)]))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// diff lists how got differs from want, one line per path.
func diff(want, got tree) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("missing %s", p))
		case g != w:
			out = append(out, fmt.Sprintf("differs %s:\n    want %s\n    got  %s", p, w, g))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, fmt.Sprintf("extra   %s", p))
		}
	}
	sort.Strings(out)
	return out
}

func (e entry) String() string {
	return fmt.Sprintf("%v uid=%d gid=%d size=%d sum=%x target=%q mtime=%d ino=%d nlink=%d xattr=%q",
		e.Mode, e.Uid, e.Gid, e.Size, e.Sum[:4], e.Target, e.Mtime, e.Ino, e.Nlink, e.Xattr)
}

// sameTree fails the test if the tree at root is not want.
func sameTree(t testing.TB, root string, want tree, what string) {
	t.Helper()
	if d := diff(want, snapshot(t, root)); len(d) > 0 {
		if len(d) > 30 {
			d = append(d[:30], fmt.Sprintf("… and %d more", len(d)-30))
		}
		t.Fatalf("%s: the tree differs:\n  %s", what, strings.Join(d, "\n  "))
	}
}
