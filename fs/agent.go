package fs

// Whose a change is. A turn whose harness named its agent
// (journal.Scope) owns only the changes the agent's processes make; a
// change by any other process during the turn — a person's editor, a
// second tool — is journaled all the same, so its pre-image exists,
// but marked NotAgent, and rollbacks treat it as a change made outside
// a turn (package rollback).
//
// Each side journals its own pre-images: the epoch's per-inode state
// (recorder.inodes) is kept apart for the agent and for the others
// (recorder.others). Shared, a person's write to a file the agent
// created in the turn, or touched first, would journal nothing — the
// file's state says its bytes are saved, or that undo deletes it — and
// the rollback would find no record of the person's change: it would
// delete the file, or restore its bytes, over the person's work. Kept
// apart, the person's first change of an inode always leaves a record
// of its own, which makes the agent's changes of that inode conflicts.
//
// The question is asked once per change, and only during a turn with a
// scope: a uid is compared with the request's own, a process is looked
// up in the thread cache (process.go) and in the state package agent
// keeps as processes fork, exec and exit; no request waits on /proc
// while the cache holds its thread. A flush of a shared mapping (pid 0)
// is the process's that maps the file (mapper.go), with that process's
// filesystem uid; a flush no process explains is not the agent's. So
// under a scope every such flush looks for its mapper (the thread last
// seen on the file first), where without one only a flush that needs a
// record does.

// notAgent reports whether the change is made, during a turn with a
// scope, by a process outside it.
func (c *change) notAgent() bool {
	if c.outside == 0 {
		c.outside = 1
		if c.op.Gate.Turn != 0 && c.op.Gate.Agent != nil && c.r.agents != nil {
			pid, uid := c.caller.ident()
			if !c.r.agents.Agent(c.op.Gate.Agent, pid, uid) {
				c.outside = 2
			}
		}
	}
	return c.outside == 2
}
