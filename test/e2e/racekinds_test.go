package e2e

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// raceFile is a file of a race group.
type raceFile struct {
	name  string // the group's name and this are the file's name
	root  bool   // owned by root, mode 0600, secret content; else the racer's, 0644
	xattr string // a user.k value, if any
	// outside: instead, a hard link the racer makes to a file of root's
	// outside the workspace (mode 0644), as protected_hardlinks=0
	// lets anyone do.
	outside bool
}

// raceKind is a kind of rollback step and how the racer redirects it.
type raceKind struct {
	name  string
	files []raceFile
	// turn makes the change the rollback undoes, through the mount, as
	// root; at gives the view path of one of the group's names.
	turn func(at func(name string) string) error
	// watch is the name at whose k-th call the racer strikes; swap, the
	// two names it exchanges then. Names are as groupPath takes them.
	watch string
	swap  [2]string
	// unWatch and unSwap, if set, are watch and swap for an unrevert,
	// which makes the turn's change again.
	unWatch string
	unSwap  [2]string
}

// groupPath returns the workspace path of a group's name: "" is the
// group's directory, "+x" the top-level sibling g+"x", any other name
// the file g/g.name.
func groupPath(g, name string) string {
	switch {
	case name == "":
		return g
	case name[0] == '+':
		return g + name[1:]
	}
	return g + "/" + g + "." + name
}

// The names of the siblings a group's directory is exchanged with: a
// directory of the racer's, and a symlink the racer makes to a
// directory of root's outside the workspace that holds files of the
// group's names.
const (
	racerDir   = "+.h"
	symlinkOut = "+.l"
)

var (
	attackerV = raceFile{name: "v"}
	rootS     = raceFile{name: "s", root: true}
	outsideZ  = raceFile{name: "z", outside: true}
)

// The changes the turns make.
func chmodV(at func(string) string) error { return os.Chmod(at("v"), 0o600) }
func chownV(at func(string) string) error { return os.Chown(at("v"), 0, 0) }
func touchV(at func(string) string) error {
	return os.Chtimes(at("v"), time.Unix(1e9, 0), time.Unix(1e9, 0))
}
func growV(at func(string) string) error   { return appendTo(at("v"), "more\n") }
func shrinkV(at func(string) string) error { return os.Truncate(at("v"), 2) }
func overwriteV(at func(string) string) error {
	f, err := os.OpenFile(at("v"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt([]byte("XXXX"), 0)
	return err
}
func setxattrV(value string) func(at func(string) string) error {
	return func(at func(string) string) error { return unix.Setxattr(at("v"), "user.k", []byte(value), 0) }
}
func createNew(at func(string) string) error {
	return os.WriteFile(at("new"), []byte("created\n"), 0o644)
}
func renameAB(at func(string) string) error { return os.Rename(at("a"), at("b")) }
func exchangeAB(at func(string) string) error {
	return unix.Renameat2(unix.AT_FDCWD, at("a"), unix.AT_FDCWD, at("b"), unix.RENAME_EXCHANGE)
}
func removeS(at func(string) string) error { return os.Remove(at("s")) }

// raceKinds: each kind of step, redirected to root's file or to the
// racer's, whichever hurts.
var raceKinds = []raceKind{
	// Attributes: the rollback chowns, chmods and sets the times of v
	// back; redirected, root's s becomes the racer's, mode 0644.
	{name: "mode", files: []raceFile{attackerV, rootS}, turn: chmodV, watch: "v", swap: [2]string{"v", "s"}},
	{name: "owner", files: []raceFile{attackerV, rootS}, turn: chownV, watch: "v", swap: [2]string{"v", "s"}},
	{name: "times", files: []raceFile{attackerV, rootS}, turn: touchV, watch: "v", swap: [2]string{"v", "s"}},
	// Sizes: truncating back what grew, writing back what was cut.
	{name: "grow", files: []raceFile{attackerV, rootS}, turn: growV, watch: "v", swap: [2]string{"v", "s"}},
	{name: "shrink", files: []raceFile{attackerV, rootS}, turn: shrinkV, watch: "v", swap: [2]string{"v", "s"}},
	// Data: root's secret pre-image written into the racer's file; the
	// racer's bytes written into root's.
	{name: "dataleak", files: []raceFile{{name: "v", root: true}, {name: "z"}}, turn: overwriteV, watch: "v", swap: [2]string{"v", "z"}},
	{name: "data", files: []raceFile{attackerV, rootS}, turn: overwriteV, watch: "v", swap: [2]string{"v", "s"}},
	// Xattrs: root's secret value set on the racer's file; the racer's
	// value set on, or removed from, root's.
	{name: "xattrleak", files: []raceFile{{name: "v", root: true, xattr: secretMark + "-x"}, {name: "z", xattr: "racer's"}},
		turn: setxattrV("changed"), watch: "v", swap: [2]string{"v", "z"}},
	{name: "xattr", files: []raceFile{{name: "v", xattr: "old"}, {name: "s", root: true, xattr: "root's"}},
		turn: setxattrV("new"), watch: "v", swap: [2]string{"v", "s"}},
	{name: "xattrrm", files: []raceFile{attackerV, {name: "s", root: true, xattr: "root's"}},
		turn: setxattrV("new"), watch: "v", swap: [2]string{"v", "s"}},
	// Entries: a created file removed (aside), a rename and an
	// exchange undone, a deleted file recovered into its directory.
	// (An unrevert recovers what a rollback removed, and the reverse.)
	{name: "remove", files: []raceFile{rootS}, turn: createNew, watch: "new", swap: [2]string{"new", "s"},
		unWatch: "", unSwap: [2]string{"", racerDir}},
	{name: "rename", files: []raceFile{{name: "a"}, rootS}, turn: renameAB, watch: "b", swap: [2]string{"b", "s"},
		unWatch: "a", unSwap: [2]string{"a", "s"}},
	{name: "exchange", files: []raceFile{{name: "a"}, {name: "b"}, rootS}, turn: exchangeAB, watch: "a", swap: [2]string{"a", "s"}},
	{name: "recover", files: []raceFile{rootS, {name: "z"}}, turn: removeS, watch: "", swap: [2]string{"", racerDir},
		unWatch: "s", unSwap: [2]string{"s", "z"}},
}

// raceLinkKinds redirect the step to a file of root's outside the
// workspace, hard-linked in by the racer.
var raceLinkKinds = []raceKind{
	{name: "linkmode", files: []raceFile{attackerV, outsideZ}, turn: chmodV, watch: "v", swap: [2]string{"v", "z"}},
	{name: "linkgrow", files: []raceFile{attackerV, outsideZ}, turn: growV, watch: "v", swap: [2]string{"v", "z"}},
	{name: "linkdata", files: []raceFile{attackerV, outsideZ}, turn: overwriteV, watch: "v", swap: [2]string{"v", "z"}},
	{name: "linkxattr", files: []raceFile{{name: "v", xattr: "old"}, outsideZ}, turn: setxattrV("new"), watch: "v", swap: [2]string{"v", "z"}},
	{name: "linkremove", files: []raceFile{outsideZ}, turn: createNew, watch: "new", swap: [2]string{"new", "z"}},
}

// raceSymlinkKinds exchange the step's directory for a symlink to a
// directory of root's outside the workspace.
var raceSymlinkKinds = []raceKind{
	{name: "dirmode", files: []raceFile{attackerV}, turn: chmodV, watch: "v", swap: [2]string{"", symlinkOut}},
	{name: "dirdata", files: []raceFile{attackerV}, turn: overwriteV, watch: "v", swap: [2]string{"", symlinkOut}},
	{name: "dirxattr", files: []raceFile{{name: "v", xattr: "old"}}, turn: setxattrV("new"), watch: "v", swap: [2]string{"", symlinkOut}},
	{name: "dirremove", files: []raceFile{rootS}, turn: createNew, watch: "new", swap: [2]string{"", symlinkOut},
		unWatch: "", unSwap: [2]string{"", symlinkOut}},
	{name: "dirrecover", files: []raceFile{rootS}, turn: removeS, watch: "", swap: [2]string{"", symlinkOut},
		unWatch: "s", unSwap: [2]string{"", symlinkOut}},
}
