package rollback

import (
	"path"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
)

// A turn that created a tree (npm install, a build directory, an
// unpacked archive) is undone by moving the tree's top directory aside
// in one rename, with everything in it, rather than entry by entry: a
// 10,000-file tree goes in one rename and one record instead of 10,000
// of each, and unrevert brings it back the same way.
//
// The plan folds the removes beneath a directory into the directory's
// own remove (Step.Covers) only when nothing else the plan does touches
// the tree: every step on a path beneath it is a runnable remove or a
// rename with both ends beneath it and nothing kept aside to bring back
// (tools rename inside the trees they make: an npm install, a build),
// and no other rename or exchange runs between the first of them and the
// directory's own step (so the paths they name stay where they are).
// The executor still checks, when it gets there, that the directory
// holds nothing but what those removes name, each inode with no other
// name outside it but those the aside area keeps only while the kernel
// uses the inode (a hard link keeps its link count exact only when
// moved aside by itself); otherwise it runs the folded steps one by one,
// exactly as an unfolded plan would, and the directory's own step
// after them.

// foldTrees folds the removes beneath directories the plan removes
// into the directories' steps.
func foldTrees(pl *Plan) {
	tops := map[string]int{} // directory -> index of its remove
	for i, s := range pl.Steps {
		if s.Op == opRemove && s.Skip == "" && s.Type == syscall.S_IFDIR && !aside.Private(s.Path) {
			tops[s.Path] = i
		}
	}
	if len(tops) == 0 {
		return
	}
	under := map[string][]int{} // directory -> the removes beneath it
	bad := map[string]bool{}
	for i, s := range pl.Steps {
		for _, p := range []string{s.Path, s.Path2} {
			if p == "" {
				continue
			}
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				top, ok := tops[d]
				switch {
				case !ok:
				case s.Skip != "" || i > top || !(s.Op == opRemove || renameWithin(&s, d)):
					bad[d] = true
				case p == s.Path:
					under[d] = append(under[d], i)
				}
			}
		}
	}
	folded := map[int]bool{}
	for d, steps := range under {
		if bad[d] || !outermost(d, tops, bad, under) {
			continue
		}
		top := tops[d]
		// Nothing between the first of them and the directory's own
		// step may move the tree: a rename or exchange out of it — nor
		// put another directory at its path (a directory removed and
		// made again: two trees at one path, whose removes belong to
		// the newer).
		if slices.ContainsFunc(pl.Steps[steps[0]:top], func(s Step) bool {
			return (s.Op == opRename || s.Op == opExchange) && !renameWithin(&s, d) ||
				(s.Op == opRemove || s.Op == opRecover) && s.Path == d
		}) {
			continue
		}
		for _, i := range steps {
			pl.Steps[top].Covers = append(pl.Steps[top].Covers, pl.Steps[i])
			folded[i] = true
		}
	}
	if len(folded) == 0 {
		return
	}
	kept := pl.Steps[:0]
	for i, s := range pl.Steps {
		if !folded[i] {
			kept = append(kept, s)
		}
	}
	pl.Steps = kept
}

// renameWithin reports whether s renames one path beneath d to another,
// bringing nothing back from the aside area: folded into d's remove, it
// need not run when the whole tree goes aside. A target the rename
// replaced counts only if it was kept aside (Aside): one new in the
// epoch is gone, with nothing to bring back (git's index.lock renamed
// over its index).
func renameWithin(s *Step, d string) bool {
	prefix := d + "/"
	return s.Op == opRename && s.Aside == "" &&
		strings.HasPrefix(s.Path, prefix) && strings.HasPrefix(s.Path2, prefix)
}

// outermost reports whether no directory above d is folded too.
func outermost(d string, tops map[string]int, bad map[string]bool, under map[string][]int) bool {
	for a := path.Dir(d); a != "."; a = path.Dir(a) {
		if _, ok := tops[a]; ok && !bad[a] && len(under[a]) > 0 {
			return false
		}
	}
	return true
}

// removeTree runs a remove with folded steps: the whole tree goes aside
// if it holds only what they name, else they run one by one.
func (x *executor) removeTree(s *Step) error {
	sl, err := x.openSlot(s.Path)
	if err != nil {
		return err
	}
	defer sl.close()
	st, id, ok, err := x.statSlot(sl)
	if err != nil {
		return err
	}
	if ok && id == s.Ino && x.holdsOnly(s, sl) {
		return x.putAside(s, sl, st, id)
	}
	if ok {
		for i := range s.Covers {
			x.do(&s.Covers[i])
		}
	}
	// Done before a crash, a mismatch it reports, or the directory,
	// emptied by the folded steps, on its own.
	return x.removeIn(s, sl)
}

// holdsOnly reports whether the directory of s (in slot sl) holds
// nothing but the inodes its folded steps remove, none with a name
// outside it. A name the aside area keeps only while the kernel uses
// the inode (a file created and unlinked in the epoch: git's temporary
// object names, once linked to the object's own) is not one: it is no
// record's, and stays where it is either way.
func (x *executor) holdsOnly(s *Step, sl *slot) bool {
	want := make(map[uint64]bool, len(s.Covers))
	for _, c := range s.Covers {
		want[c.Ino] = true
	}
	dir, err := x.openDir(sl, s.Ino)
	if err != nil {
		return false
	}
	defer dir.Close()
	type links struct{ nlink, inTree uint32 }
	linked := map[uint64]*links{} // inodes with more than one name -> names seen in the tree
	err = backing.WalkDir(dir, func(_ string, st *unix.Stat_t) error {
		if !want[x.identity(st)] {
			return errForeign
		}
		if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if st.Dev != x.env.RootDev {
				return errForeign
			}
			l := linked[st.Ino]
			if l == nil {
				l = &links{nlink: uint32(st.Nlink)}
				linked[st.Ino] = l
			}
			l.inTree++
		}
		return nil
	})
	if err != nil {
		return false
	}
	for ino, l := range linked {
		if l.nlink != l.inTree+x.keptForUse(ino) {
			return false
		}
	}
	return true
}

// keptForUse is how many names of inode ino the aside area keeps only
// for the kernel (aside.Area.KeptForUse).
func (x *executor) keptForUse(ino uint64) uint32 {
	if x.env.Aside == nil {
		return 0
	}
	return x.env.Aside.KeptForUse(ino)
}

var errForeign = skipError{reason: reasonNotEmpty}
