package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// Observe describes what is at rel in dir as the comparison sees it:
// type, permission bits with set-id and sticky bits, owner, group, link
// count, device number, size of a regular file, and the access control
// lists (raw extended attributes) if there are any.
func Observe(dir, rel string) string {
	p := filepath.Join(dir, rel)
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return fmt.Sprintf("%s: %s", rel, result(err))
	}
	s := fmt.Sprintf("%s: %s %04o %d:%d nlink=%d", rel, typeName(st.Mode), st.Mode&07777, st.Uid, st.Gid, st.Nlink)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR, unix.S_IFBLK:
		s += fmt.Sprintf(" rdev=%d,%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	case unix.S_IFREG:
		s += fmt.Sprintf(" size=%d blocks=%d", st.Size, st.Blocks)
		if b, err := os.ReadFile(p); err == nil {
			s += fmt.Sprintf(" sha256=%x", sha256.Sum256(b))
		}
	case unix.S_IFDIR:
		s += fmt.Sprintf(" entries=%v", entries(p))
	}
	for _, x := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
		buf := make([]byte, 1024)
		n, err := unix.Lgetxattr(p, x, buf)
		if err == nil {
			s += fmt.Sprintf(" %s=%s", x[len("system."):], hex.EncodeToString(buf[:n]))
		}
	}
	return s
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFCHR:
		return "chr"
	case unix.S_IFBLK:
		return "blk"
	case unix.S_IFSOCK:
		return "sock"
	}
	return "?"
}

// entries lists the names in directory p, sorted.
func entries(p string) []string {
	f, err := os.Open(p)
	if err != nil {
		return []string{result(err.(*os.PathError).Err)}
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	sort.Strings(names)
	return names
}
