package rollback

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/test/testenv"
)

// A workspace for rollback tests, without FUSE: a temporary directory
// is the backing directory, wired to a real journal and aside area as
// daemon.Start wires them. Its methods make a change the way the mount
// does (fs/create.go, fs/remove.go, fs/rename.go, fs/recorder.go): the
// gate is entered, what the change destroys is journaled first, then
// the change is made on the backing directory. Changes made while no
// turn is open are journaled outside any turn (Turn 0), as the mount
// journals them; outside changes (a file edited behind the mount's
// back) are made directly and journaled as KindOutside, as package
// rescan journals what it finds.
type ws struct {
	t    testing.TB
	dir  string // the backing directory
	jdir string
	opts journal.Options
	root int
	dev  uint64
	j    *journal.Journal
	area *aside.Area
	env  *Env

	// What the current epoch has journaled per inode, as the mount's
	// recorder keeps it: for the agent in inos, for others in others.
	epoch  uint64
	inos   map[uint64]*inoState
	others map[uint64]*inoState
	// person: changes are made by a process outside the turn's agent
	// scope (asPerson).
	person bool
}

type inoState struct {
	attr, created bool
	size          int64           // at the first touch
	saved         []bool          // bytes of [0, size) whose pre-image is journaled
	xattrs        map[string]bool // xattrs whose old value is journaled
}

func newWS(t testing.TB) *ws {
	t.Helper()
	top := t.TempDir()
	w := &ws{t: t, dir: filepath.Join(top, "ws"), jdir: filepath.Join(top, "journal"),
		opts: journal.Options{Reserve: 1 << 20}}
	if err := os.Mkdir(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := unix.Open(w.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.root = root
	var st unix.Stat_t
	if err := unix.Fstat(root, &st); err != nil {
		t.Fatal(err)
	}
	w.dev = st.Dev
	w.open()
	t.Cleanup(func() {
		w.close()
		unix.Close(w.root)
	})
	return w
}

// open opens the journal and the aside area, as a daemon's start does.
func (w *ws) open() {
	w.t.Helper()
	j, err := journal.Open(w.jdir, w.opts)
	if err != nil {
		w.t.Fatalf("open journal: %v", err)
	}
	token, err := j.Binding()
	if err != nil {
		w.t.Fatal(err)
	}
	area, err := aside.Open(w.root, token)
	if err != nil {
		w.t.Fatal(err)
	}
	w.j, w.area = j, area
	w.env = &Env{Journal: j, Tree: backing.NewTree(w.root), Aside: area, RootDev: w.dev}
	w.inos, w.others = map[uint64]*inoState{}, map[uint64]*inoState{}
}

func (w *ws) close() {
	if w.j != nil {
		w.j.Close()
		w.area.Close()
		w.j, w.area = nil, nil
	}
}

// restart closes and reopens the journal and the aside area, as a
// daemon that died and starts again; opts replace the journal options.
func (w *ws) restart(opts journal.Options) {
	w.t.Helper()
	w.close()
	w.opts = opts
	w.open()
}

func (w *ws) abs(rel string) string { return filepath.Join(w.dir, rel) }

// id returns the identity records give what is at rel.
func (w *ws) id(rel string) uint64 {
	w.t.Helper()
	st := w.lstat(rel)
	return journal.InodeID(st.Dev, st.Ino, w.dev)
}

func (w *ws) lstat(rel string) *unix.Stat_t {
	w.t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(w.abs(rel), &st); err != nil {
		w.t.Fatal(err)
	}
	return &st
}

// Turns.

func (w *ws) begin() journal.Turn {
	w.t.Helper()
	t, err := w.j.BeginTurn("", "", time.Now())
	if err != nil {
		w.t.Fatal(err)
	}
	return t
}

func (w *ws) end() {
	w.t.Helper()
	if _, err := w.j.EndTurn(time.Now()); err != nil {
		w.t.Fatal(err)
	}
}

// turn runs changes in a new turn and returns it.
func (w *ws) turn(changes func()) journal.Turn {
	w.t.Helper()
	t := w.begin()
	changes()
	w.end()
	return t
}

// turnNum returns turn n as the journal has it now.
func (w *ws) turnNum(n uint64) journal.Turn {
	w.t.Helper()
	t, err := w.j.FindTurn(fmt.Sprint(n))
	if err != nil {
		w.t.Fatal(err)
	}
	return t
}

// The recorder's bookkeeping.

// enter holds the gate for one change.
func (w *ws) enter() journal.Gate {
	g := w.j.Enter()
	if g.Epoch != w.epoch {
		w.epoch, w.inos, w.others = g.Epoch, map[uint64]*inoState{}, map[uint64]*inoState{}
	}
	return g
}

// asPerson makes the changes of fn as a process outside the turn's
// agent scope would: journaled with their own epoch state, and, in a
// turn, marked NotAgent (fs/agent.go).
func (w *ws) asPerson(fn func()) {
	w.inos, w.others, w.person = w.others, w.inos, true
	defer func() { w.inos, w.others, w.person = w.others, w.inos, false }()
	fn()
}

func (w *ws) state(id uint64) *inoState {
	s := w.inos[id]
	if s == nil {
		s = &inoState{xattrs: map[string]bool{}}
		w.inos[id] = s
	}
	return s
}

func (w *ws) append(g journal.Gate, rec *journal.Record, src *os.File) {
	w.t.Helper()
	rec.NotAgent = w.person && g.Turn != 0
	var err error
	if src != nil {
		err = w.j.Append(g, rec, src)
	} else {
		err = w.j.Append(g, rec, nil)
	}
	if err != nil {
		w.t.Fatalf("journal %v %s: %v", rec.Kind, rec.Path, err)
	}
}

// touch journals the attributes of what is at rel before its first
// change in the epoch (recorder.touch).
func (w *ws) touch(g journal.Gate, rel string, cause journal.Cause) (*inoState, uint64) {
	w.t.Helper()
	st := w.lstat(rel)
	id := journal.InodeID(st.Dev, st.Ino, w.dev)
	s := w.state(id)
	if !s.attr && !s.created {
		w.append(g, &journal.Record{Kind: journal.KindAttr, Cause: cause, Path: rel,
			Type: st.Mode & syscall.S_IFMT, Ino: id, Attr: journal.AttrOf(st)}, nil)
		s.attr, s.size, s.saved = true, st.Size, make([]bool, st.Size)
	}
	return s, id
}

// save journals the pre-image of bytes [lo, hi) of the file at rel, as
// far as they existed at the first touch and are not journaled yet
// (recorder.save).
func (w *ws) save(g journal.Gate, s *inoState, id uint64, rel string, lo, hi int64) {
	w.t.Helper()
	if s.created {
		return
	}
	hi = min(hi, s.size)
	f, err := os.Open(w.abs(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	for i := lo; i < hi; {
		if s.saved[i] {
			i++
			continue
		}
		j := i
		for j < hi && !s.saved[j] {
			s.saved[j] = true
			j++
		}
		w.append(g, &journal.Record{Kind: journal.KindData, Path: rel, Type: syscall.S_IFREG, Ino: id, Off: i, Len: j - i}, f)
		i = j
	}
}

// dirent journals the attributes of the directory holding rel before
// its first entry change in the epoch (change.dirent).
func (w *ws) dirent(g journal.Gate, rel string) {
	w.t.Helper()
	dir := path.Dir(rel)
	if dir == "." {
		dir = ""
	}
	w.touch(g, dir, journal.CauseDirent)
}

// put makes a file (with its directories) directly, before any
// journaled change: what the workspace held before cowfs mounted it.
func (w *ws) put(rel, content string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(w.abs(rel)), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(w.abs(rel), []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// putDir makes a directory directly, like put.
func (w *ws) putDir(rel string) {
	w.t.Helper()
	if err := os.MkdirAll(w.abs(rel), 0o755); err != nil {
		w.t.Fatal(err)
	}
}

// Changes through the mount.

// create makes a regular file with content.
func (w *ws) create(rel, content string) {
	w.t.Helper()
	w.make(rel, syscall.S_IFREG, func(p string) error { return os.WriteFile(p, []byte(content), 0o644) })
}

func (w *ws) mkdir(rel string) {
	w.t.Helper()
	w.make(rel, syscall.S_IFDIR, func(p string) error { return os.Mkdir(p, 0o755) })
}

func (w *ws) symlink(target, rel string) {
	w.t.Helper()
	w.make(rel, syscall.S_IFLNK, func(p string) error { return os.Symlink(target, p) })
}

// make journals the creation of rel (Node.make), then has mk create it.
// Content written to a file created in the epoch journals nothing.
func (w *ws) make(rel string, typ uint32, mk func(abs string) error) {
	w.t.Helper()
	g := w.enter()
	defer g.Leave()
	w.dirent(g, rel)
	w.append(g, &journal.Record{Kind: journal.KindCreate, Path: rel, Type: typ}, nil)
	if err := mk(w.abs(rel)); err != nil {
		w.t.Fatal(err)
	}
	w.state(w.id(rel)).created = true
}

// link makes rel a new hard link to existing (Node.Link).
func (w *ws) link(existing, rel string) {
	w.t.Helper()
	g := w.enter()
	defer g.Leave()
	st := w.lstat(existing)
	w.dirent(g, rel)
	w.append(g, &journal.Record{Kind: journal.KindLink, Path: rel, Path2: existing, Ino: w.id(existing),
		Type: st.Mode & syscall.S_IFMT}, nil)
	if err := os.Link(w.abs(existing), w.abs(rel)); err != nil {
		w.t.Fatal(err)
	}
}

// write overwrites (or extends) rel at off with data.
func (w *ws) write(rel string, off int64, data string) {
	w.t.Helper()
	g := w.enter()
	defer g.Leave()
	s, id := w.touch(g, rel, journal.CauseWrite)
	w.save(g, s, id, rel, off, off+int64(len(data)))
	f, err := os.OpenFile(w.abs(rel), os.O_WRONLY, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(data), off); err != nil {
		w.t.Fatal(err)
	}
}

// truncate sets rel's size.
func (w *ws) truncate(rel string, size int64) {
	w.t.Helper()
	g := w.enter()
	defer g.Leave()
	s, id := w.touch(g, rel, journal.CauseTruncate)
	w.save(g, s, id, rel, size, s.size)
	if err := os.Truncate(w.abs(rel), size); err != nil {
		w.t.Fatal(err)
	}
}

func (w *ws) chmod(rel string, mode os.FileMode) {
	w.t.Helper()
	g := w.enter()
	defer g.Leave()
	w.touch(g, rel, journal.CauseMode)
	if err := os.Chmod(w.abs(rel), mode); err != nil {
		w.t.Fatal(err)
	}
}

// setxattr sets (or, with value nil, removes) xattr name of rel
// (Node.beforeXattr).
func (w *ws) setxattr(rel, name string, value []byte) {
	w.t.Helper()
	g := w.enter()
	defer g.Leave()
	s, id := w.touch(g, rel, journal.CauseXattr)
	if !s.created && !s.xattrs[name] {
		old, ok := w.getxattr(rel, name)
		w.append(g, &journal.Record{Kind: journal.KindXattr, Path: rel, Type: w.lstat(rel).Mode & syscall.S_IFMT,
			Ino: id, XattrName: name, XattrValue: old, XattrExisted: ok}, nil)
		s.xattrs[name] = true
	}
	var err error
	if value == nil {
		err = unix.Lremovexattr(w.abs(rel), name)
	} else {
		err = unix.Lsetxattr(w.abs(rel), name, value, 0)
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *ws) getxattr(rel, name string) ([]byte, bool) {
	w.t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Lgetxattr(w.abs(rel), name, buf)
	if errors.Is(err, unix.ENODATA) {
		return nil, false
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return buf[:n], true
}

// remove unlinks a file or removes an empty directory (Node.remove): the
// inode moves aside, unless it is a file created in this epoch.
func (w *ws) remove(rel string) {
	w.t.Helper()
	g := w.enter()
	defer g.Leave()
	w.dirent(g, rel)
	st := w.lstat(rel)
	id := journal.InodeID(st.Dev, st.Ino, w.dev)
	isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	rec := &journal.Record{Kind: journal.KindRemove, Path: rel, Type: st.Mode & syscall.S_IFMT, Ino: id, Attr: journal.AttrOf(st)}
	if !w.state(id).created || isDir {
		rec.Aside = w.area.NewName()
	}
	w.append(g, rec, nil)
	if rec.Aside != "" {
		w.parentDo(rel, func(dir int, name string) error { return w.area.MoveIn(dir, name, rec.Aside, st) })
		return
	}
	if err := os.Remove(w.abs(rel)); err != nil {
		w.t.Fatal(err)
	}
}

// parentDo calls fn with a descriptor of rel's directory and its name.
func (w *ws) parentDo(rel string, fn func(dir int, name string) error) {
	w.t.Helper()
	dir, err := unix.Open(filepath.Dir(w.abs(rel)), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	defer unix.Close(dir)
	if err := fn(dir, filepath.Base(rel)); err != nil {
		w.t.Fatal(err)
	}
}

// rename renames from to to with renameat2 flags (Node.Rename): a
// target it replaces is kept aside first (a file by a hard link, an
// empty directory by moving it), unless it is a file new in the epoch.
func (w *ws) rename(from, to string, flags uint32) {
	w.t.Helper()
	g := w.enter()
	defer g.Leave()
	st1 := w.lstat(from)
	var st2 unix.Stat_t
	exists := unix.Lstat(w.abs(to), &st2) == nil
	exchange := flags&unix.RENAME_EXCHANGE != 0
	rec := &journal.Record{Kind: journal.KindRename, Path: from, Path2: to, Flags: flags,
		Type: st1.Mode & syscall.S_IFMT, Ino: journal.InodeID(st1.Dev, st1.Ino, w.dev)}
	id2 := journal.InodeID(st2.Dev, st2.Ino, w.dev)
	targetIsDir := st2.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if exchange {
		rec.Ino2 = id2
	}
	if exists && !exchange {
		rec.Ino2 = id2
		if !w.state(id2).created || targetIsDir {
			rec.Aside, rec.Attr = w.area.NewName(), journal.AttrOf(&st2)
		}
	}
	w.dirent(g, from)
	w.dirent(g, to)
	w.append(g, rec, nil)
	if rec.Aside != "" {
		w.parentDo(to, func(dir int, name string) error {
			if targetIsDir {
				return w.area.MoveIn(dir, name, rec.Aside, &st2)
			}
			return w.area.LinkIn(dir, name, rec.Aside, &st2)
		})
	}
	if err := unix.Renameat2(unix.AT_FDCWD, w.abs(from), unix.AT_FDCWD, w.abs(to), uint(flags)); err != nil {
		w.t.Fatal(err)
	}
}

// Changes outside the mount.

// outside runs change directly on the backing directory, then journals
// what package rescan would find at rel: a KindOutside record.
func (w *ws) outside(rel string, change func(abs string) error) {
	w.t.Helper()
	var before unix.Stat_t
	existed := unix.Lstat(w.abs(rel), &before) == nil
	if err := change(w.abs(rel)); err != nil {
		w.t.Fatal(err)
	}
	g := w.j.Exclusive()
	defer g.Leave()
	rec := &journal.Record{Kind: journal.KindOutside, Path: rel}
	var st unix.Stat_t
	switch {
	case unix.Lstat(w.abs(rel), &st) != nil:
		rec.Cause, rec.Type, rec.Ino = journal.CauseOutsideDeleted, before.Mode&syscall.S_IFMT, journal.InodeID(before.Dev, before.Ino, w.dev)
	case !existed:
		rec.Cause = journal.CauseOutsideCreated
	case st.Ino != before.Ino || st.Mode&syscall.S_IFMT != before.Mode&syscall.S_IFMT:
		rec.Cause = journal.CauseOutsideReplaced
	default:
		rec.Cause = journal.CauseOutsideModified
	}
	if rec.Cause != journal.CauseOutsideDeleted {
		rec.Type, rec.Ino, rec.Attr = st.Mode&syscall.S_IFMT, journal.InodeID(st.Dev, st.Ino, w.dev), journal.AttrOf(&st)
	}
	w.append(g, rec, nil)
}

// Looking at the workspace.

// snapshot describes every entry of the workspace (not the private
// directory): type, permissions, content or link target, user xattrs.
// Directory times are left out: they are put back too, but an entry
// change made by the test after a rollback moves them legitimately.
func (w *ws) snapshot() string {
	w.t.Helper()
	var lines []string
	err := filepath.Walk(w.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.dir, p)
		if rel == aside.Dir {
			return filepath.SkipDir
		}
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %q mtime=%d", b, fi.ModTime().UnixNano())
		}
		if v, ok := w.getxattr(rel, "user.test"); ok {
			line += fmt.Sprintf(" user.test=%q", v)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// same fails t unless the workspace is as snapshot before says.
func (w *ws) same(what, before string) {
	w.t.Helper()
	if after := w.snapshot(); after != before {
		w.t.Errorf("%s: workspace differs\nwant:\n%s\ngot:\n%s", what, before, after)
	}
}

func (w *ws) read(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.abs(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

func (w *ws) exists(rel string) bool {
	_, err := os.Lstat(w.abs(rel))
	return err == nil
}

// Rollbacks.

func (w *ws) rollback(to journal.Turn, force bool) *Outcome {
	w.t.Helper()
	out, err := Rollback(w.env, to, force, false)
	if err != nil {
		w.t.Fatalf("rollback to before turn %d: %v", to.Num, err)
	}
	return out
}

func (w *ws) unrevert(force bool) *Outcome {
	w.t.Helper()
	out, err := Unrevert(w.env, force)
	if err != nil {
		w.t.Fatalf("unrevert: %v", err)
	}
	return out
}

// actions renders a report as "path action [reason] [from X] [to Y]"
// lines, sorted.
func actions(report []PathAction) string {
	var lines []string
	for _, a := range report {
		line := a.Path + " " + a.Action
		if a.Reason != "" {
			line += " (" + a.Reason + ")"
		}
		if a.From != "" {
			line += " from " + a.From
		}
		if a.To != "" {
			line += " to " + a.To
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// wantReport fails t unless report is exactly the lines want (any order).
func wantReport(t testing.TB, what string, report []PathAction, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := actions(report); got != strings.Join(want, "\n") {
		t.Errorf("%s: report\n%s\nwant\n%s", what, got, strings.Join(want, "\n"))
	}
}

// asideEntries returns the names in the aside area.
func (w *ws) asideEntries() []string {
	w.t.Helper()
	ents, err := os.ReadDir(filepath.Join(w.dir, aside.Prefix))
	if err != nil {
		w.t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// immutable sets the immutable flag (chattr +i) on p, skipping the test
// where the filesystem or the user cannot, and returns what clears it
// (also run at cleanup, so t.TempDir can be removed).
func immutable(t *testing.T, p string) (clear func()) {
	t.Helper()
	const fsImmutable = 0x10 // FS_IMMUTABLE_FL
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(fl|fsImmutable))
	}
	if err != nil {
		unix.Close(fd)
		testenv.Skip(t, "cannot make a file immutable here: "+err.Error())
	}
	var once sync.Once
	clear = func() {
		once.Do(func() {
			defer unix.Close(fd)
			if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(fl)); err != nil {
				t.Errorf("clearing the immutable flag of %s: %v", p, err)
			}
		})
	}
	t.Cleanup(clear)
	return clear
}
