package rollback

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"syscall"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
	"golang.org/x/sys/unix"
)

// Op is what a step does to undo one record: what the executor does on
// the backing directory, and what it checks first. Its name is its
// encoding, in JSON and in the plans the journal stores (packed.go), so
// a plan stored by an earlier cowfs reads back the same.
type Op string

// Step operations.
const (
	opRemove   Op = "remove"   // move Path (holding Ino) aside: undoes a creation
	opRecover  Op = "recover"  // move Aside back to Path: undoes a removal
	opRename   Op = "rename"   // rename Path (holding Ino) back to Path2, then Aside to Path
	opExchange Op = "exchange" // exchange Path (holding Ino) and Path2 (holding Ino2)
	opAttr     Op = "attr"     // put record Seq's attributes back on Path (holding Ino)
	opData     Op = "data"     // put record Seq's bytes back into Path (holding Ino)
	opXattr    Op = "xattr"    // put record Seq's xattr back on Path (holding Ino)
)

// Step is one undo, in execution order. Its fields say what the
// backing directory must hold for the step to run, so it is checked
// before it acts and can tell "already done" (a run interrupted by a
// crash) from "something else is there" (skip, and say so).
type Step struct {
	Seq   uint64 `json:"seq"` // the record undone
	Op    Op     `json:"op"`
	Path  string `json:"path"`
	Path2 string `json:"path2,omitempty"`
	Ino   uint64 `json:"ino,omitempty"` // identity expected at Path
	Ino2  uint64 `json:"ino2,omitempty"`
	Type  uint32 `json:"type,omitempty"` // S_IFMT of the object at Path
	Aside string `json:"aside,omitempty"`
	Dir   bool   `json:"dir,omitempty"` // opAttr: a directory's times after entry changes
	Skip  string `json:"skip,omitempty"`
	// Covers, on the opRemove of a directory, are the removes of what
	// it holds, folded into it (trees.go): the directory goes aside
	// whole, or, if it holds anything else, they run one by one first.
	Covers []Step `json:"covers,omitempty"`
}

// Plan is a rollback (or an unrevert) worked out: the steps that undo
// records From <= seq < To, newest first, with the ones that must not
// run marked as skipped. It can be shown (dry run) and executed once; it
// is stored before execution so a crash can be finished from it.
type Plan struct {
	Target uint64 `json:"target"` // rolled back to before this turn (0 for an unrevert)
	From   uint64 `json:"from"`
	To     uint64 `json:"to"`
	Force  bool   `json:"force,omitempty"`
	Steps  []Step `json:"steps"`
	// Skipped are the records not undone: conflicts, and steps the
	// backing directory did not allow. They stay in effect.
	Skipped []uint64 `json:"skipped,omitempty"`
	// Report is what the plan does to each path.
	Report []PathAction `json:"report"`

	// Packed holds the steps instead of Steps once they are planned,
	// and in a stored plan (packed.go); skips are the reasons, by record,
	// of steps found skipped at run time (learn).
	Packed *packed `json:"packed,omitempty"`
	skips  map[uint64]string
}

// pack moves the plan's steps into packed form.
func (pl *Plan) pack() {
	if pl.Packed == nil {
		pl.Packed, pl.Steps = pack(pl.Steps), nil
	}
}

// numSteps is how many steps the plan has.
func (pl *Plan) numSteps() int {
	if pl.Packed != nil {
		return pl.Packed.N
	}
	return len(pl.Steps)
}

// eachStep calls fn with the plan's steps from index from on, in order,
// with the skips learnt at run time applied, and stops at fn's first
// error.
func (pl *Plan) eachStep(from int, fn func(i int, s *Step) error) error {
	learnt := func(s *Step) {
		if r, ok := pl.skips[s.Seq]; ok && s.Skip == "" {
			s.Skip = r
		}
	}
	if pl.Packed != nil {
		return pl.Packed.each(from, func(i int, s *Step) error {
			learnt(s)
			return fn(i, s)
		})
	}
	for i := from; i < len(pl.Steps); i++ {
		learnt(&pl.Steps[i])
		if err := fn(i, &pl.Steps[i]); err != nil {
			return err
		}
	}
	return nil
}

// Reasons a step is skipped.
const (
	reasonOutside = "changed outside a turn after the target turn began"
	// reasonNotAgent: a process outside the agent scope of a turn
	// (a person's editor, another tool) changed it during that turn.
	reasonNotAgent = "changed during a turn by a process that is not the turn's agent"
	// reasonOutsideMount: a rescan found the path changed behind the
	// mount's back (package rescan); what that destroyed is unknown.
	reasonOutsideMount = "changed outside the mount"
	reasonMismatch     = "not as the journal says: changed outside the mount"
	reasonNotEmpty     = "directory holds entries no rolled-back change made"
	reasonOccupied     = "the path is taken by something no rolled-back change made"
	reasonNoAside      = "the kept inode is missing from the aside area"
	// reasonAsideChanged: the aside entry is not the inode kept there.
	reasonAsideChanged = "the kept inode in the aside area was replaced behind cowfs's back"
	// reasonRaced: between a step's check and its act, something else
	// took the object's place (object.go); nothing was done to it.
	reasonRaced = "replaced while the rollback ran: something else took its place"
	// reasonFailed: the step failed again when a stopped rollback was
	// retried; its records stay, for a later rollback to try.
	reasonFailed = "failed, skipped on retry: "
	// reasonFailedBefore: a newer step of the same file was skipped so.
	reasonFailedBefore = "not done: a newer change to the same file could not be undone"
	// reasonKept: an older change at a path a skipped step left as it
	// is (foresee.go, keptPaths).
	reasonKept = "not done: a newer change at the same path could not be undone"
)

// planner builds a Plan.
type planner struct {
	env    *Env
	target func(*rec) bool // records to undo; the rest in range are changes outside turns
	// settled, if set, names records the top rollback of a stack has
	// already undone, with their undo (stack.go): walked, never stepped
	// or taken for conflicts.
	settled func(*rec) bool
	// topSkipped are the records the top of the stack skipped, which a
	// plan with settled records retries (stack.go).
	topSkipped map[uint64]bool
	force      bool
	idents     map[string]uint64 // identity today of a backing path, cached
	types      map[string]uint32
	stat       *backing.Stater // reads those, planning and reporting
	// seen holds what the rescan just before planning saw at the paths
	// it tracks (env.Rescan); nil without one.
	seen *journal.FingerprintView
	// notInEffect are the changes outside the turns that are no longer
	// in effect (undone.go).
	notInEffect map[uint64]bool
}

// done lets go of what planning held open.
func (p *planner) done() {
	if p.stat != nil {
		p.stat.Close()
		p.stat = nil
	}
	if p.seen != nil {
		p.seen.Close()
		p.seen = nil
	}
	p.idents, p.types = nil, nil // a map entry per path planned: not needed to run the plan
}

// build plans undoing recs (newest first).
func (p *planner) build(recs []rec) (*Plan, error) {
	p.idents, p.types = map[string]uint64{}, map[string]uint32{}
	if p.env.Rescan != nil && p.seen == nil {
		p.seen = p.env.Journal.ViewFingerprints()
	}
	conflictIno, conflictPath := p.conflicts(recs)
	p.dropUndone(recs, conflictIno) // conflicts that have gone away (undone.go)
	changes := 0
	for i := range recs {
		if recs[i].Kind != journal.KindEvent {
			changes++
		}
	}
	// At most a step a change: sized once, never grown and copied.
	pl := &Plan{Force: p.force, Steps: make([]Step, 0, changes)}
	now := newPast(p.asidePath)
	var kept keptPaths // what skipped steps leave in place (foresee.go)
	for i := range recs {
		r := &recs[i]
		if r.Kind == journal.KindEvent {
			continue // not a change
		}
		if p.isSettled(r) {
			now.undo(r)
			continue
		}
		if p.settled != nil && p.topSkipped[r.Seq] && r.Kind != journal.KindOutside && !p.settledHere(now, r) {
			return nil, errPlanWhole
		}
		var s *Step
		skip := ""
		switch {
		case p.undoes(r):
			if !p.force {
				skip = p.touches(now, r, conflictIno, conflictPath)
			}
		case p.force:
		default:
			skip = whyKept(r)
		}
		s, err := p.step(now, r)
		if err != nil {
			return nil, err
		}
		if s != nil && skip == "" {
			skip = s.Skip
		}
		// What the executor will find, and what skipped steps left
		// (foresee.go).
		if s != nil && skip == "" {
			skip = p.foresee(now, s)
		}
		if skip == "" {
			skip = kept.touches(now, r)
		}
		if s != nil {
			s.Skip = skip
			pl.Steps = append(pl.Steps, *s)
		}
		if skip != "" || r.Kind == journal.KindOutside {
			kept.add(p, now, r)
		}
		if skip != "" {
			pl.Skipped = append(pl.Skipped, r.Seq)
			continue
		}
		now.undo(r)
	}
	foldTrees(pl)
	// Packed now, not when the plan runs: reporting reads the steps
	// packed, so a plan of 150,000 steps does not hold them unpacked
	// (21 MB) beside its records and report (issue #15).
	pl.pack()
	return pl, nil
}

// undoes reports whether the plan undoes r: a record of the target, but
// never a change found outside the mount, which has nothing to undo it
// with, nor one a process outside a turn's agent scope made during the
// turn, which is not the turn's: both are kept as changes outside turns
// are (unless force).
func (p *planner) undoes(r *rec) bool {
	return r.Kind != journal.KindOutside && !r.NotAgent && p.target(r) && !p.isSettled(r)
}

// whyKept says why r, which the plan does not undo, is kept.
func whyKept(r *rec) string {
	switch {
	case r.Kind == journal.KindOutside:
		return reasonOutsideMount
	case r.NotAgent:
		return reasonNotAgent
	}
	return reasonOutside
}

// isSettled reports whether the top of the stack settled r (stack.go).
func (p *planner) isSettled(r *rec) bool { return p.settled != nil && p.settled(r) }

// conflicts returns the identities and paths that changes outside turns
// (or outside the mount) touched, with the reason to give: undoing a
// turn's change to them would destroy work no rolled-back turn did.
func (p *planner) conflicts(recs []rec) (map[uint64]string, map[string]string) {
	inos, paths := map[uint64]string{}, map[string]string{}
	if p.force {
		return inos, paths
	}
	// The namespace is followed back only as far as the oldest such
	// change: most rollbacks have none, and build no past here at all.
	last := -1
	conflicting := func(r *rec) bool {
		return !p.undoes(r) && r.Kind != journal.KindEvent && !p.isSettled(r)
	}
	for i := range recs {
		if conflicting(&recs[i]) {
			last = i
		}
	}
	past := newPast(p.asidePath)
	for i := range recs[:last+1] {
		r := &recs[i]
		if conflicting(r) {
			why := whyKept(r)
			mark := func(id uint64) {
				if id != 0 && inos[id] != reasonOutsideMount {
					inos[id] = why
				}
			}
			markPath := func(q string) {
				if q != "" && paths[q] != reasonOutsideMount {
					paths[q] = why
				}
			}
			switch r.Kind {
			case journal.KindCreate, journal.KindLink:
				if id, ok := p.identity(past.lookup(r.Path)); ok {
					mark(id)
				}
				markPath(r.Path)
			case journal.KindRemove, journal.KindRename:
				ino, ino2 := liveIDs(r, past)
				mark(ino)
				mark(ino2)
				markPath(r.Path)
				markPath(r.Path2)
			case journal.KindOutside:
				mark(r.Ino)
				markPath(r.Path)
			case journal.KindAttr:
				if r.Cause != journal.CauseDirent {
					ino, _ := liveIDs(r, past)
					mark(ino)
				}
			default:
				ino, _ := liveIDs(r, past)
				mark(ino)
			}
		}
		past.undo(r)
	}
	return inos, paths
}

// touches returns why undoing r would touch what changes outside turns
// (or outside the mount) touched, or "" if it would not.
func (p *planner) touches(now *past, r *rec, inos map[uint64]string, paths map[string]string) string {
	if len(inos) == 0 && len(paths) == 0 {
		return ""
	}
	first := func(whys ...string) string {
		for _, w := range whys {
			if w != "" {
				return w
			}
		}
		return ""
	}
	switch r.Kind {
	case journal.KindCreate, journal.KindLink:
		id, _ := p.identity(now.lookup(r.Path))
		return first(inos[id], paths[r.Path])
	}
	ino, ino2 := liveIDs(r, now) // 0 marks nothing
	switch r.Kind {
	case journal.KindRemove, journal.KindRename:
		return first(inos[ino], inos[ino2], paths[r.Path], paths[r.Path2])
	}
	return inos[ino] // a change in place
}

// step returns the step that undoes r, given the namespace just after
// r (now), or nil if undoing r needs no action.
func (p *planner) step(now *past, r *rec) (*Step, error) {
	s := &Step{Seq: r.Seq, Path: r.Path, Ino: r.Ino, Type: r.Type}
	holds := func(path string, id uint64) bool {
		got, ok := p.identity(now.lookup(path))
		return ok && got == id
	}
	taken := func(path string) bool {
		_, ok := p.identity(now.lookup(path))
		return ok
	}
	switch r.Kind {
	case journal.KindCreate, journal.KindLink:
		e := now.lookup(r.Path)
		if e.absent || e.vanished() {
			// Already gone: a later change removed it and, since it
			// was new, kept nothing.
			return nil, nil
		}
		id, ok := p.identity(e)
		if !ok {
			s.Skip = reasonMismatch
		}
		s.Op, s.Ino, s.Type = opRemove, id, p.typeOf(e, r.Type)
	case journal.KindRemove:
		if r.Aside == "" {
			return nil, nil // created in the same epoch: its creation's undo covers it
		}
		s.Op, s.Aside = opRecover, r.Aside
		if taken(r.Path) {
			s.Skip = reasonOccupied
		}
	case journal.KindRename:
		s.Path, s.Path2, s.Ino2 = r.Path2, r.Path, r.Ino2
		if r.Flags&unix.RENAME_EXCHANGE != 0 {
			// Exchange again; but an object that was new and is gone
			// has nothing to go back to, so the other only moves.
			eA, eB := now.lookup(r.Path), now.lookup(r.Path2)
			switch {
			case eA.vanished() && eB.vanished():
				return nil, nil
			case eA.vanished() || eB.vanished():
				from, to, e := r.Path2, r.Path, eB
				if eB.vanished() {
					from, to, e = r.Path, r.Path2, eA
				}
				id, ok := p.identity(e)
				s.Op, s.Path, s.Path2, s.Ino, s.Ino2 = opRename, from, to, id, 0
				if !ok {
					s.Skip = reasonMismatch
				} else if taken(to) {
					s.Skip = reasonOccupied
				}
				return s, nil
			}
			s.Op = opExchange
			id, _ := p.identity(eA)
			s.Ino2 = id
			if !holds(r.Path2, r.Ino) {
				s.Skip = reasonMismatch
			}
			break
		}
		s.Op, s.Aside = opRename, r.Aside
		if now.lookup(r.Path2).vanished() {
			// The renamed object was new and is gone; only a target it
			// replaced comes back.
			if r.Aside == "" {
				return nil, nil
			}
			s.Op, s.Path, s.Path2, s.Ino = opRecover, r.Path2, "", r.Ino2
			if taken(r.Path2) {
				s.Skip = reasonOccupied
			}
			break
		}
		switch {
		case !holds(r.Path2, r.Ino):
			s.Skip = reasonMismatch
		case taken(r.Path):
			s.Skip = reasonOccupied
		}
	case journal.KindAttr, journal.KindData, journal.KindXattr:
		if now.lookup(r.Path).vanished() {
			return nil, nil // new, and gone: nothing to restore
		}
		s.Op = map[journal.Kind]Op{journal.KindAttr: opAttr, journal.KindData: opData, journal.KindXattr: opXattr}[r.Kind]
		s.Dir = r.Kind == journal.KindAttr && r.Cause == journal.CauseDirent
		if !holds(r.Path, r.Ino) {
			s.Skip = reasonMismatch
		}
	case journal.KindOutside:
		return nil, nil // nothing to undo it with
	default:
		return nil, fmt.Errorf("rollback: record %d has unknown kind %v", r.Seq, r.Kind)
	}
	return s, nil
}

// identity returns the identity of the object an entry of the past
// names where the records do not say it (what a turn created): as the
// rescan before planning saw it at its place, or else as its place holds
// it now.
//
// The rescan's view comes first because it is the one whose changes are
// accounted for: between that scan and the planner's own stat, a writer
// behind the mount could exchange another file (root's, say) into the
// place of one the turn created, and a plan made from the second look
// would expect that file there and remove it. Planned from the scan, the
// step expects what the turn left, finds something else and skips.
func (p *planner) identity(e entry) (uint64, bool) {
	if e.absent || e.vanished() {
		return 0, false
	}
	if e.ino != 0 {
		return e.ino, true
	}
	if id, ok := p.idents[e.loc]; ok {
		return id, id != 0
	}
	if p.seen != nil {
		if f, ok, err := p.seen.Get(e.loc); err == nil && ok {
			p.idents[e.loc], p.types[e.loc] = f.Ino, f.Type
			return f.Ino, f.Type != 0
		}
	}
	if p.stat == nil {
		p.stat = p.env.Tree.NewStater()
	}
	st, err := p.stat.Lstat(e.loc)
	if err != nil {
		p.idents[e.loc] = 0
		return 0, false
	}
	id := journal.InodeID(st.Dev, st.Ino, p.env.RootDev)
	p.idents[e.loc], p.types[e.loc] = id, st.Mode&syscall.S_IFMT
	return id, true
}

func (p *planner) typeOf(e entry, fallback uint32) uint32 {
	if t, ok := p.types[e.loc]; ok && t != 0 {
		return t
	}
	return fallback
}

func (p *planner) asidePath(name string) string { return aside.Prefix + name }

// planHead is what a stored plan says before its steps and report.
type planHead struct {
	Target  uint64   `json:"target"`
	From    uint64   `json:"from"`
	To      uint64   `json:"to"`
	Force   bool     `json:"force,omitempty"`
	Skipped []uint64 `json:"skipped,omitempty"`
}

// stored writes the plan as JSON that decodes as json.Marshal's does,
// its steps packed (with the skips learnt at run time) and a part, and
// then a path, at a time, so that storing a plan of 150,000 steps holds
// a few KiB of it at once, not all of it and then some. (Plans stored
// before packing list their steps under "steps", and still read.)
func (pl *Plan) stored() journal.PlanWriter {
	return func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		head, err := json.Marshal(planHead{pl.Target, pl.From, pl.To, pl.Force, pl.Skipped})
		if err != nil {
			return err
		}
		bw.Write(head[:len(head)-1])
		bw.WriteString(`,"packed":{"parts":[`)
		if err := pl.storeParts(bw); err != nil {
			return err
		}
		fmt.Fprintf(bw, `],"n":%d},"report":[`, pl.numSteps())
		for i := range pl.Report {
			if err := element(bw, i, &pl.Report[i]); err != nil {
				return err
			}
		}
		bw.WriteString(`]}`)
		return bw.Flush()
	}
}

// storeParts writes the packed parts of the plan's steps as the elements
// of a JSON array: as they are, or packed again with the skips learnt at
// run time applied.
func (pl *Plan) storeParts(bw *bufio.Writer) error {
	if pl.Packed != nil && len(pl.skips) == 0 {
		for i, p := range pl.Packed.Parts {
			if err := element(bw, i, p); err != nil {
				return err
			}
		}
		return nil
	}
	var part []byte
	parts, n := 0, pl.numSteps()
	return pl.eachStep(0, func(i int, s *Step) error {
		part = appendStep(part, s)
		if (i+1)%packSteps != 0 && i != n-1 {
			return nil
		}
		err := element(bw, parts, packEnc.EncodeAll(part, nil))
		part, parts = part[:0], parts+1
		return err
	})
}

// element writes v as the i-th element of a JSON array.
func element(w *bufio.Writer, i int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if i > 0 {
		w.WriteByte(',')
	}
	_, err = w.Write(b)
	return err
}
