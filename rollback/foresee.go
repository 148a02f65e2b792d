package rollback

import (
	"io"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/journal"
)

// The plan says what the run will do, so a dry run shows it: a step
// the executor will find it cannot take is skipped in the plan, with
// the reason the executor would give. step (plan.go) sees a path held
// by another object or taken; foresee sees the rest — a directory that
// will not be empty, a kept inode that will not be in the aside area, a
// path whose directory will be missing, an exchange with nothing on one
// side. Each is judged in the namespace the plan has reached at that
// step (now), and in the order the executor checks (moves.go), so both
// give the same first reason. A dry run that said "1 empty directory
// removed, 2 skipped" where the run did 0 and 3 was a plan that did not
// look.

// foresee returns why step s, which the plan would run, will be
// skipped by the executor, or "" if it will run.
func (p *planner) foresee(now *past, s *Step) string {
	switch s.Op {
	case opRemove:
		if s.Type == syscall.S_IFDIR && p.holdsEntries(now, s.Path) {
			return reasonNotEmpty
		}
	case opRecover:
		switch {
		case !p.keptAside(now, s.Aside):
			return reasonNoAside
		case !p.inDir(now, s.Path):
			return reasonMismatch
		}
	case opRename:
		switch {
		case !p.inDir(now, s.Path2):
			return reasonMismatch
		case s.Aside != "" && !p.keptAside(now, s.Aside):
			return reasonNoAside // the target it replaced cannot come back
		}
	case opExchange:
		if s.Ino2 == 0 { // nothing on the other side
			return reasonMismatch
		}
	case opAttr, opData, opXattr:
		// The identity matched (step); the type must too, or the
		// inode number was given out again after the record's inode
		// was freed behind the mount.
		if t, ok := p.typeAt(now.lookup(s.Path)); ok && s.Type != 0 && t != s.Type {
			return reasonMismatch
		}
	}
	return ""
}

// holdsEntries reports whether directory dir, in the namespace now,
// holds anything: an entry of the directory it is today that no record
// moved, or one the records followed to or from elsewhere (past's
// entries beneath it). What a turn did not make in it — files made
// outside a turn, behind the mount, or by a change the plan skips — is
// not the rollback's to take, and keeps it. It reads the directory as
// the executor will, beneath the root; a directory it cannot read holds,
// as far as the plan knows, nothing (the executor finds out).
func (p *planner) holdsEntries(now *past, dir string) bool {
	holds := func(name string) bool {
		_, ok := p.identity(now.lookup(dir + "/" + name))
		return ok
	}
	if n := now.node(dir, false); n != nil {
		for name := range n.kids {
			if holds(name) {
				return true
			}
		}
	}
	e := now.lookup(dir)
	if e.absent || e.vanished() {
		return false
	}
	f, err := p.env.Tree.Open(e.loc, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if holds(name) {
				return true
			}
		}
		if err != nil {
			if err != io.EOF && p.env.Log != nil {
				p.env.Log.Warn("reading a directory to plan its removal", "path", e.loc, "err", err)
			}
			return false
		}
	}
}

// keptAside reports whether the aside area will hold the entry name
// (a later record, undone before, may have taken it out and put it back).
func (p *planner) keptAside(now *past, name string) bool {
	_, ok := p.identity(now.lookup(p.asidePath(name)))
	return ok
}

// inDir reports whether the directory of p will be one: the executor
// opens it beneath the root, through directories only, and a step into
// a directory that is missing, a file or a symlink is skipped.
func (p *planner) inDir(now *past, q string) bool {
	if _, ok := aside.Name(q); ok {
		return true // an entry of the area, which is there
	}
	d := path.Dir(q)
	if d == "." {
		return true
	}
	t, ok := p.typeAt(now.lookup(d))
	return ok && t == syscall.S_IFDIR
}

// typeAt returns the type of the object an entry of the past names, and
// false if there is none.
func (p *planner) typeAt(e entry) (uint32, bool) {
	if _, ok := p.identity(e); !ok {
		return 0, false
	}
	if t := p.types[e.loc]; t != 0 {
		return t, true
	}
	if p.stat == nil {
		p.stat = p.env.Tree.NewStater()
	}
	st, err := p.stat.Lstat(e.loc)
	if err != nil {
		return 0, false
	}
	t := st.Mode & syscall.S_IFMT
	p.types[e.loc] = t
	return t, true
}

// keptPaths are where the objects that skipped steps leave in place
// are, as backing paths today (past locations): a skipped record stays
// in effect, and an older record that moves a name at such a place, or
// beneath it, is not undone either. The plan's namespace would
// otherwise take it back over what stays — a file created and removed
// again at a path a skipped step left another object at would make the
// path look free, and a recovery into it look possible — and the
// executor, finding the object there, would skip what the plan said it
// does. Changes in place are judged by identity, and need no such care.
type keptPaths map[string]bool

// add keeps where the objects at r's paths are, r being skipped (or a
// change found outside the mount, which nothing undoes).
func (k *keptPaths) add(p *planner, now *past, r *rec) {
	for _, q := range namespacePaths(r) {
		e := now.lookup(q)
		if _, ok := p.identity(e); ok {
			if *k == nil {
				*k = keptPaths{}
			}
			(*k)[e.loc] = true
		}
	}
}

// touches returns why r, older than the skipped records, is not undone
// either, or "".
func (k keptPaths) touches(now *past, r *rec) string {
	if len(k) == 0 {
		return ""
	}
	for _, q := range namespacePaths(r) {
		e := now.lookup(q)
		if e.absent || e.vanished() {
			continue
		}
		for loc := e.loc; ; loc = path.Dir(loc) {
			if k[loc] {
				return reasonKept
			}
			if !strings.Contains(loc, "/") {
				break
			}
		}
	}
	return ""
}

// namespacePaths are the paths whose names undoing r changes (or, for
// a change outside the mount, would).
func namespacePaths(r *rec) []string {
	switch r.Kind {
	case journal.KindCreate, journal.KindLink, journal.KindRemove, journal.KindOutside:
		return []string{r.Path}
	case journal.KindRename:
		return []string{r.Path, r.Path2}
	}
	return nil
}
