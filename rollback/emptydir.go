package rollback

import (
	"io"

	"golang.org/x/sys/unix"
)

// A directory a turn made goes aside, when its making is undone, only
// if it is empty by then (moves.go, remove): what else it holds — files
// made outside a turn, behind the mount, or by a change the plan skips
// — is not the rollback's to take, and keeps it. The planner sees this
// coming, as it sees an occupied path or a mismatch, so that the plan,
// and the dry run that shows it, say what the run will do: a dry run
// that said "1 empty directory removed, 2 skipped" where the run did 0
// and 3 was a preview that lied.

// holdsEntries reports whether directory dir, in the namespace now (the
// plan's, just after the record that made dir), holds anything: an
// entry of the directory it is today that no record moved, or one the
// records followed to or from elsewhere (past's entries beneath it).
// It reads the directory as the executor will, beneath the root; a
// directory it cannot read holds, as far as the plan knows, nothing
// (the executor finds out).
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
