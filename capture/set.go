package capture

import "sync"

// Set is what one epoch has captured, per identity. It is safe for
// concurrent use; its zero value is empty. Taken in a new epoch (Op.Take),
// it starts afresh: everything must be journaled again.
type Set struct {
	mu    sync.Mutex
	epoch uint64
	ids   map[uint64]*State // nil: nothing held (Forget)
}

// State is what the epoch has captured of one identity. Op.Take returns
// it locked; its methods are called, and the Op's methods given it,
// while it is, and the caller unlocks it.
//
// Its size matters: a turn that touched 50,000 files holds 50,000 of
// them until the next boundary (Set.Forget).
type State struct {
	mu sync.Mutex
	// takes counts the Ops that took this state, so that an Op
	// withdrawing its records knows whether another relied on them
	// meanwhile (withdraw.go).
	takes   uint64
	attr    bool            // attributes journaled: the first touch was
	created bool            // created in this epoch: undo deletes it, nothing to keep
	size    int64           // size at the first touch
	saved   Ranges          // bytes of [0, size) whose pre-image is journaled
	xattrs  map[string]bool // extended attributes whose old value is journaled
}

// take returns the state of id in epoch, unlocked.
func (t *Set) take(epoch, id uint64) *State {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.epoch != epoch || t.ids == nil {
		// A boundary: everything must be journaled afresh.
		t.epoch, t.ids = epoch, map[uint64]*State{}
	}
	s := t.ids[id]
	if s == nil {
		s = &State{}
		t.ids[id] = s
	}
	return s
}

// Forget lets go of what an epoch before epoch captured, which would
// otherwise be held until the next take: a turn that touched 50,000
// inodes kept 5 MiB of it.
func (t *Set) Forget(epoch uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.epoch != epoch {
		t.epoch, t.ids = epoch, nil
	}
}

// Created reports whether id was created in epoch (SetCreated); with
// epoch 0, in whatever epoch the set holds, which a caller without the
// journal's gate may ask as a hint.
func (t *Set) Created(epoch, id uint64) bool {
	t.mu.Lock()
	var s *State
	if (epoch == 0 || t.epoch == epoch) && t.ids != nil {
		s = t.ids[id]
	}
	t.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created
}

// Unlock lets s go, for the next Op that takes it.
func (s *State) Unlock() { s.mu.Unlock() }

// Created reports whether the identity was created in the epoch: undo
// deletes it, so none of its pre-images is journaled.
func (s *State) Created() bool { return s.created }

// SetCreated notes that the identity was created in the epoch.
func (s *State) SetCreated() { s.created = true }

// Touched reports whether the identity's attributes are journaled (its
// first touch in the epoch), so that a caller need not stat it again.
func (s *State) Touched() bool { return s.attr }
