package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/rollback"
)

// Diff shows what changed between the start of turn From (or of one of
// its steps) and its end, the start of a later turn, or now.
//
// A diff is one view of the workspace: both ends as of one moment,
// however the workspace changes while it is made. The journal is pinned
// under its exclusive gate (journal.Pin), the records in range are
// streamed — once forward, folded into the changes, once backward,
// undone into the two ends — and each changed path is looked up at both
// ends; then the gate is left, and the files' versions are copied,
// diffed and let go of one by one. An end at the start of an epoch (a
// turn's or a step's start, a finished turn's end) is rebuilt from the
// records whatever changes meanwhile (rollback.At). An end inside the
// open epoch ("now", the end of the running step) is the object itself:
// its copy is of the pinned moment only if the object is unchanged when
// the copy is done. One changed in the clock tick before the pin cannot
// be told unchanged, and is copied under the gate; one found changed
// makes the diff start again, and the third try holds the gate
// throughout, as materialize's retries do.
func (s *service) Diff(ctx context.Context, req ctl.DiffRequest) (ctl.Diff, error) {
	for attempt := 0; ; attempt++ {
		out, err := s.diffOnce(req, attempt == 2)
		if !errors.Is(err, errChanged) {
			if err != nil {
				return ctl.Diff{}, apiError(err)
			}
			return out, nil
		}
		s.d.log.Info("making a diff again: a file changed while it was copied", "err", err, "attempt", attempt+1)
	}
}

// errChanged: an object changed while its version was copied.
var errChanged = errors.New("changed during the copy")

// quietFor is how long an object must have been left alone for a copy
// made without the gate to tell whether it changed: a write lands a
// change time no older than the kernel's coarse clock, one tick (at
// most 10 ms) behind, so an object whose change time is older than
// that when it is looked up shows any later write.
const quietFor = 20 * time.Millisecond

// diffChunk is how many jobs are kept in one allocation.
const diffChunk = 4096

// diffJob is one changed path: what its line in the diff needs of its
// change (not the change: its caller's command line, its times), and
// its two versions, looked up under the gate. A diff of 50,000 files
// holds 50,000 of these while it copies.
type diffJob struct {
	path, kind, from string
	notAgent         bool
	oldPath          string // where the object was when the range began ("": nowhere)
	old, new         found
}

// change is the part of j's change diffFile reads.
func (j *diffJob) change() change {
	return change{Path: j.path, Kind: j.kind, From: j.from, NotAgent: j.notAgent, Origin: j.oldPath}
}

// found is a version looked up under the gate: what a copy needs.
type found struct {
	v      rollback.Version
	live   bool   // inside the open epoch: the copy must find it unchanged
	target string // a symlink's, read under the gate
}

func (s *service) diffOnce(req ctl.DiffRequest, hold bool) (ctl.Diff, error) {
	d := s.d
	g, pin := d.j.Pin()
	held := true
	defer func() {
		pin.Release()
		if held {
			g.Leave()
		}
	}()
	pinned := time.Now()
	// Turns are found under the pin: a prune between finding one and
	// pinning could have taken its records.
	from, err := s.findTurn(string(req.From))
	if err != nil {
		return ctl.Diff{}, err
	}
	out := ctl.Diff{From: fmt.Sprintf("turn %d", from.Num), Files: []ctl.DiffFile{}}
	fromSeq, toSeq := from.StartSeq, from.EndSeq
	switch req.To {
	case "":
		out.To = fmt.Sprintf("end of turn %d", from.Num)
		if from.Open() {
			toSeq, out.To = 0, "now"
		}
	case "now":
		toSeq, out.To = 0, "now"
	default:
		to, err := s.findTurn(req.To)
		if err != nil {
			return ctl.Diff{}, err
		}
		if to.Num < from.Num {
			return ctl.Diff{}, ctl.Errorf(ctl.CodeBadRequest, "turn %d is before turn %d", to.Num, from.Num)
		}
		toSeq, out.To = to.StartSeq, fmt.Sprintf("turn %d", to.Num)
	}

	// The changes in range (one step's only, if asked), folded as the
	// records are read.
	var fold folder
	var stepSeen bool
	var last uint64 // the last record in range
	end := toSeq
	if end == 0 {
		end = pin.Seq
	}
	err = d.j.Scan(fromSeq, end, false, func(r *journal.Record) error {
		if req.Step != "" {
			if r.Turn != from.Num || r.Step != req.Step {
				return nil
			}
			if r.Kind == journal.KindEvent && r.Path == journal.EventStep && !stepSeen {
				fromSeq, stepSeen = r.Seq, true // the step's own start
			}
		}
		if r.Kind != journal.KindEvent && r.Group == 0 {
			fold.Add(r)
			last = r.Seq
		}
		return nil
	})
	if err != nil {
		return ctl.Diff{}, err
	}
	if req.Step != "" {
		if !stepSeen {
			return ctl.Diff{}, ctl.Errorf(ctl.CodeNotFound, "turn %d has no step %q", from.Num, req.Step)
		}
		out.From = fmt.Sprintf("turn %d step %s", from.Num, req.Step)
		if last != 0 {
			toSeq = last + 1
		}
		out.To = "end of the step"
	}

	// Both ends of the range, each undone once for all its files, in
	// one pass back from the pin.
	then := rollback.NewAt(d.j, d.tree, pin.Seq, d.area.Path, d.rootDev)
	endAt := rollback.NewAt(d.j, d.tree, pin.Seq, d.area.Path, d.rootDev) // now
	err = d.j.Scan(fromSeq, pin.Seq, true, func(r *journal.Record) error {
		then.Undo(r)
		if toSeq != 0 && r.Seq >= toSeq {
			endAt.Undo(r)
		}
		return nil
	})
	if err != nil {
		return ctl.Diff{}, err
	}
	// An end inside the open epoch is not rebuilt from records.
	liveEnd := toSeq == 0 || toSeq > pin.EpochSeq
	liveThen := fromSeq > pin.EpochSeq

	scratch, err := os.CreateTemp(d.loc.Dir, "diff-*")
	if err != nil {
		return ctl.Diff{}, err
	}
	os.Remove(scratch.Name())
	defer scratch.Close()
	// The jobs left for after the gate, in chunks: each is let go of
	// once copied, so the jobs shrink as the diff's text grows.
	var later [][]diffJob
	waiting := 0
	changes := visible(fold.Changes())
	// The fold's map goes while the jobs are made, and each change's
	// strings as its job is made; the files are one slice, not grown,
	// copied and grown again.
	fold = folder{}
	out.Files = make([]ctl.DiffFile, 0, len(changes))
	for i := range changes {
		c := changes[i]
		changes[i] = change{}
		// The changes name paths as the range left them (a removed
		// file's follows its directory); the old version is read
		// where what each is about was when the range began.
		j := diffJob{path: c.Path, kind: c.Kind, from: c.From, notAgent: c.NotAgent, oldPath: c.Origin}
		if c.Origin != "" || c.Path == "" {
			if j.old, err = s.lookUp(then, c.Origin, liveThen); err != nil {
				return ctl.Diff{}, err
			}
		}
		if j.new, err = s.lookUp(endAt, c.Path, liveEnd); err != nil {
			return ctl.Diff{}, err
		}
		if hold || j.old.restless(pinned) || j.new.restless(pinned) {
			f, err := s.diffJob(j, scratch, req.Stat, false)
			if err != nil {
				return ctl.Diff{}, err
			}
			out.Files = append(out.Files, f)
			continue
		}
		if len(later) == 0 || len(later[len(later)-1]) == cap(later[len(later)-1]) {
			later = append(later, make([]diffJob, 0, min(diffChunk, len(changes)-i)))
		}
		later[len(later)-1] = append(later[len(later)-1], j)
		waiting++
	}
	if !hold {
		g.Leave()
		held = false
		d.log.Debug("diff: the gate left", "files", len(out.Files)+waiting, "copied under it", len(out.Files),
			"held", time.Since(pinned))
		if d.leftGate != nil {
			d.leftGate()
		}
	}
	for k, chunk := range later {
		for _, j := range chunk {
			f, err := s.diffJob(j, scratch, req.Stat, true)
			if err != nil {
				return ctl.Diff{}, err
			}
			out.Files = append(out.Files, f)
		}
		later[k] = nil
	}
	sort.SliceStable(out.Files, func(a, b int) bool { return out.Files[a].Path < out.Files[b].Path })
	return out, nil
}

// lookUp finds what path held at at's time, under the gate.
func (s *service) lookUp(at *rollback.At, path string, live bool) (found, error) {
	v, err := at.Find(path)
	if err != nil {
		return found{}, err
	}
	f := found{v: v, live: live}
	if v.Exists && v.Type == syscall.S_IFLNK {
		f.target, _ = s.d.tree.Readlink(v.Loc)
	}
	return f, nil
}

// restless reports whether f must be copied under the gate: a live
// version whose object changed too recently for a later copy to tell
// whether it changed again.
func (f found) restless(pinned time.Time) bool {
	return f.live && f.v.Exists && f.v.Type == syscall.S_IFREG &&
		pinned.Sub(time.Unix(f.v.Ctime.Unix())) < quietFor
}

// diffJob copies j's two versions into scratch in turn and diffs them.
// outside: the gate is not held, so a live version must be found
// unchanged (errChanged if not).
func (s *service) diffJob(j diffJob, scratch *os.File, stat, outside bool) (ctl.DiffFile, error) {
	var old, new version
	var err error
	if j.oldPath != "" || j.path == "" {
		if old, err = s.read(j.old, scratch, outside); err != nil {
			return ctl.DiffFile{}, err
		}
	}
	if new, err = s.read(j.new, scratch, outside); err != nil {
		return ctl.DiffFile{}, err
	}
	return diffFile(j.change(), j.oldPath, old, new, stat), nil
}

// version is one side of a file's diff.
type version struct {
	exists   bool
	typ      uint32
	content  []byte // regular files up to MaxDiffBytes
	tooLarge bool
	target   string // symlinks
}

// read copies f's content (a regular file's, up to MaxDiffBytes) by
// way of scratch.
func (s *service) read(f found, scratch *os.File, outside bool) (version, error) {
	v := f.v
	if !v.Exists {
		return version{}, nil
	}
	out := version{exists: true, typ: v.Type, target: f.target}
	if v.Type != syscall.S_IFREG {
		return out, nil
	}
	// A version over MaxDiffBytes is named, not shown, so it is not
	// copied. Its size is known from the lookup: the object's then,
	// and the records' since.
	if v.SizeFrom(v.Size) > ctl.MaxDiffBytes {
		out.tooLarge = true
		return out, nil
	}
	src, err := v.Open(s.d.tree)
	if err != nil {
		if outside && errors.Is(err, rollback.ErrMoved) {
			return out, fmt.Errorf("%w: %v", errChanged, err)
		}
		return out, err
	}
	defer src.Close()
	if err := scratch.Truncate(0); err != nil {
		return out, err
	}
	if _, err := scratch.Seek(0, io.SeekStart); err != nil {
		return out, err
	}
	if err := v.MaterializeFrom(src, s.d.j, scratch); err != nil {
		return out, err
	}
	if outside && f.live {
		if same, err := v.Unchanged(src); err != nil || !same {
			return out, fmt.Errorf("%w: %s", errChanged, v.Loc)
		}
	}
	b, err := io.ReadAll(io.NewSectionReader(scratch, 0, ctl.MaxDiffBytes+1))
	if err != nil {
		return out, err
	}
	out.content, out.tooLarge = b, len(b) > ctl.MaxDiffBytes
	return out, nil
}

// diffFile compares the two versions of a changed path; oldPath is
// where the old one was.
func diffFile(c change, oldPath string, old, new version, stat bool) ctl.DiffFile {
	f := ctl.DiffFile{Path: ctl.Path(c.Path), Status: c.Kind}
	if c.Kind == changeRenamed {
		// Where it was when the range began: c.From is where the
		// rename found it, which may itself have moved with a
		// directory earlier in the range.
		f.From = ctl.Path(c.From)
		if oldPath != "" {
			f.From = ctl.Path(oldPath)
		}
	}
	if c.NotAgent {
		f.Agent = ctl.NotAgent()
	}
	switch {
	case old.exists && !new.exists && c.Kind != changeDeleted:
		f.Status = changeDeleted
	case !old.exists && new.exists && c.Kind != changeCreated:
		f.Status = changeCreated
	case !old.exists && !new.exists:
		f.Note = "created and removed again"
		return f
	}
	for _, v := range []version{old, new} {
		switch {
		case !v.exists:
		case v.typ == syscall.S_IFLNK:
			f.Note = fmt.Sprintf("symlink: %q -> %q", old.target, new.target)
			return f
		case v.typ == syscall.S_IFDIR:
			f.Note = "directory"
			return f
		case v.typ != syscall.S_IFREG:
			f.Note = "special file"
			return f
		case v.tooLarge:
			f.TooLarge = true
			return f
		case binary(v.content):
			f.Binary = true
			return f
		}
	}
	a, b := lines(old.content), lines(new.content)
	fromName, toName := "a/"+oldPath, "b/"+c.Path
	if !old.exists {
		fromName = "/dev/null"
	}
	if !new.exists {
		toName = "/dev/null"
	}
	text, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: a, B: b, FromFile: fromName, ToFile: toName, Context: 3})
	for _, line := range bytes.Split([]byte(text), []byte("\n")) {
		switch {
		case bytes.HasPrefix(line, []byte("+++")), bytes.HasPrefix(line, []byte("---")):
		case bytes.HasPrefix(line, []byte("+")):
			f.Added++
		case bytes.HasPrefix(line, []byte("-")):
			f.Removed++
		}
	}
	if !stat {
		f.Diff = text
	}
	return f
}

// lines splits content into lines, each ending in a newline (a last
// line without one gets one).
func lines(content []byte) []string {
	if len(content) == 0 {
		return nil
	}
	ls := strings.SplitAfter(string(content), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	} else {
		ls[len(ls)-1] += "\n"
	}
	return ls
}

// binary reports whether content looks like binary data: a NUL byte or
// invalid UTF-8 in its first 8 KiB.
func binary(content []byte) bool {
	head := content
	if len(head) > 8192 {
		head = head[:8192]
		// A multi-byte character cut at the boundary is not binary.
		for i := 0; i < 3 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
	}
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(head)
}
