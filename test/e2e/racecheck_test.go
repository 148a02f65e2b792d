package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// # Judging a rollback that raced
//
// While a rollback runs, the racer moves names about; a path says
// little afterwards. So the race tests judge by inode: a snapshot of
// every object beneath the backing directory before the turn (the
// state a rollback restores), before the rollback and after it, keyed
// by inode number, and the rollback's report, whose paths name the
// objects the rollback meant (what the path held when it began). The
// rules (raceCheck) hold whatever the racer did, since the racer only
// renames.

// secretMark is in the content or xattrs of every file only root may
// read; it must never show up where the racer can read it.
const secretMark = "SECRET"

// objState is what the checks compare of one object.
type objState struct {
	Paths  []string // where it is, relative to the workspace (several if hard-linked)
	Mode   uint32   // type and permissions
	Uid    uint32
	Gid    uint32
	Size   int64
	Sum    [32]byte
	Mtime  int64
	Xattr  string
	Secret bool // content or xattrs hold secretMark
}

// inodes is a snapshot of a tree by inode number.
type inodes map[uint64]*objState

func (s *objState) dir() bool { return s.Mode&syscall.S_IFMT == syscall.S_IFDIR }

// same compares what a restore restores and the racer cannot change by
// renaming: for directories type, mode and owner (their times follow
// their entries), for everything else also size, bytes, mtime, xattrs.
func (s *objState) same(o *objState) bool {
	if s.Mode != o.Mode || s.Uid != o.Uid || s.Gid != o.Gid {
		return false
	}
	return s.dir() || s.Size == o.Size && s.Sum == o.Sum && s.Mtime == o.Mtime && s.Xattr == o.Xattr
}

// between reports whether each part of s is as in a or as in b: an
// object a rollback skipped may have had some of its steps done.
func (s *objState) between(a, b *objState) bool {
	one := func(x, y, z any) bool { return x == y || x == z }
	ok := one(s.Mode&0o7777, a.Mode&0o7777, b.Mode&0o7777) && s.Mode&syscall.S_IFMT == a.Mode&syscall.S_IFMT &&
		one(s.Uid, a.Uid, b.Uid) && one(s.Gid, a.Gid, b.Gid)
	if s.dir() {
		return ok
	}
	// A data restore and a size restore may each be done or not; the
	// times restored after them then are not (so mtime is any).
	return ok && one(s.Xattr, a.Xattr, b.Xattr) &&
		(s.Sum == a.Sum || s.Sum == b.Sum || s.Size == a.Size || s.Size == b.Size)
}

func (s *objState) String() string {
	return fmt.Sprintf("%v %o uid=%d gid=%d size=%d sum=%x mtime=%d xattr=%q",
		s.Paths, s.Mode, s.Uid, s.Gid, s.Size, s.Sum[:4], s.Mtime, s.Xattr)
}

// readable reports whether uid and gid nobody may read the object (by
// its mode bits; the workspace has no ACLs).
func (s *objState) readable() bool {
	switch {
	case s.Uid == nobody:
		return s.Mode&0o400 != 0
	case s.Gid == nobody:
		return s.Mode&0o040 != 0
	}
	return s.Mode&0o004 != 0
}

// snapshotInodes records every object beneath root, except cowfs's
// private directory.
func snapshotInodes(t testing.TB, root string) inodes {
	t.Helper()
	snap := inodes{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".cowfs" {
			return filepath.SkipDir
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		if o := snap[st.Ino]; o != nil {
			o.Paths = append(o.Paths, rel)
			return nil
		}
		o := &objState{Paths: []string{rel}, Mode: st.Mode, Uid: st.Uid, Gid: st.Gid, Size: st.Size, Mtime: st.Mtim.Nano()}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			o.Sum, o.Secret = sha256.Sum256(b), bytes.Contains(b, []byte(secretMark))
			o.Xattr = xattrs(p)
		case syscall.S_IFDIR:
			o.Xattr = xattrs(p)
		}
		o.Secret = o.Secret || strings.Contains(o.Xattr, secretMark)
		snap[st.Ino] = o
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return snap
}

// at returns the inode at workspace path p, or 0.
func (s inodes) at(p string) uint64 {
	for ino, o := range s {
		for _, q := range o.Paths {
			if q == p {
				return ino
			}
		}
	}
	return 0
}

// exchanges are the pairs of workspace paths the racer exchanged
// (any number of times).
type exchanges [][2]string

// partner returns where the racer's exchanges may have moved what was
// at p: p itself, or p with an exchanged prefix replaced.
func (x exchanges) partner(p string) []string {
	out := []string{p}
	for _, e := range x {
		for i, a := range e {
			if p == a || strings.HasPrefix(p, a+"/") {
				out = append(out, e[1-i]+p[len(a):])
			}
		}
	}
	return out
}

// raceCheck lists how a rollback or an unrevert, reported as res,
// broke the rules, given the tree before it ran (before), the state
// it restores (goal), the tree after it (after) and the racer's
// exchanges:
//
//   - an object reported restored or recovered is, as in goal, at its
//     path or where the racer's exchanges put it; one reported deleted
//     is gone from the workspace;
//   - an object reported skipped is still there, each of its parts as
//     before or as in goal;
//   - every other object is still there and unchanged;
//   - nothing appeared that goal did not have;
//   - no file the racer may read holds a secret.
func raceCheck(before, goal, after inodes, res ctl.RollbackResult, x exchanges) []string {
	var bad []string
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	targets := map[uint64]bool{} // objects the rollback acted on
	for _, pa := range res.Paths {
		p := string(pa.Path)
		switch pa.Action {
		case ctl.ActionRestore, ctl.ActionRecover:
			ino := goal.at(p)
			if ino == 0 {
				report("%s reported %s, but goal has nothing there", p, pa.Action)
				continue
			}
			targets[ino] = true
			got := after[ino]
			switch {
			case got == nil:
				report("%s reported %s, but its inode %d is gone (goal %s)", p, pa.Action, ino, goal[ino])
			case !got.same(goal[ino]):
				report("%s reported %s, but inode %d is\n      %s, not as it was:\n      %s", p, pa.Action, ino, got, goal[ino])
			case !anyIn(got.Paths, x.partner(p)):
				report("%s reported %s, but inode %d is at %v, not at any of %v", p, pa.Action, ino, got.Paths, x.partner(p))
			}
		case ctl.ActionDelete:
			ino := before.at(p)
			if ino == 0 || goal[ino] != nil {
				// Removed with the directory holding it, or a rename
				// undone: what was at p goes back to a path the
				// report names as recovered.
				continue
			}
			targets[ino] = true
			if got := after[ino]; got != nil {
				report("%s reported deleted, but inode %d is still at %v", p, ino, got.Paths)
			}
		case ctl.ActionSkip:
			ino := before.at(p)
			if ino == 0 {
				continue
			}
			targets[ino] = true
			got, was, want := after[ino], before[ino], goal[ino]
			switch {
			case got == nil:
				report("%s reported skipped, but its inode %d is gone (was %s)", p, ino, was)
			case want == nil && !got.same(was), want != nil && !got.between(was, want):
				report("%s reported skipped, but inode %d changed:\n      was %s\n      now %s\n      goal %v", p, ino, was, got, want)
			}
		}
	}
	for ino, was := range before {
		if targets[ino] {
			continue
		}
		switch got := after[ino]; {
		case got == nil:
			report("inode %d (%s), on no path the report names, is gone", ino, was)
		case !got.same(was):
			report("inode %d, on no path the report names, changed:\n      was %s\n      now %s", ino, was, got)
		}
	}
	for ino, got := range after {
		if before[ino] == nil && goal[ino] == nil {
			report("inode %d appeared: %s", ino, got)
		}
		if got.Secret && got.readable() {
			report("inode %d holds a secret and is readable by uid %d: %s", ino, nobody, got)
		}
	}
	sort.Strings(bad)
	return bad
}

func anyIn(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if h == w {
				return true
			}
		}
	}
	return false
}
