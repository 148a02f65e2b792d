package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/rollback"
)

// Diff shows what changed between the start of turn From (or of one of
// its steps) and its end, the start of a later turn, or now.
func (s *service) Diff(ctx context.Context, req ctl.DiffRequest) (ctl.Diff, error) {
	d := s.d
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

	// The changes in range (one step's only, if asked), and the two
	// versions of each changed file, read under the gate so no change
	// lands in between.
	type versions struct {
		c        journal.Change
		oldPath  string // where c's object was when the range began ("": nowhere)
		old, new version
	}
	var files []versions
	err = func() error {
		g := d.j.Exclusive()
		defer g.Leave()
		var all, inRange []*journal.Record
		err := d.j.Scan(fromSeq, 0, true, func(r *journal.Record) error {
			all = append(all, r)
			return nil
		})
		if err != nil {
			return err
		}
		var stepSeen bool
		for i := len(all) - 1; i >= 0; i-- {
			r := all[i]
			if toSeq != 0 && r.Seq >= toSeq {
				break
			}
			if req.Step != "" {
				if r.Turn != from.Num || r.Step != req.Step {
					continue
				}
				if r.Kind == journal.KindEvent && r.Path == journal.EventStep {
					if !stepSeen {
						fromSeq = r.Seq // the step's own start
					}
					stepSeen = true
				}
			}
			if r.Kind != journal.KindEvent && r.Group == 0 {
				inRange = append(inRange, r)
			}
		}
		if req.Step != "" {
			if !stepSeen {
				return ctl.Errorf(ctl.CodeNotFound, "turn %d has no step %q", from.Num, req.Step)
			}
			out.From = fmt.Sprintf("turn %d step %s", from.Num, req.Step)
			if len(inRange) > 0 {
				toSeq = inRange[len(inRange)-1].Seq + 1
			}
			out.To = "end of the step"
		}
		// Both ends of the range, each undone once for all its files.
		then := rollback.NewAt(d.tree, since(all, fromSeq), d.area.Path, d.rootDev)
		end := rollback.NewAt(d.tree, nil, d.area.Path, d.rootDev) // now
		if toSeq != 0 {
			end = rollback.NewAt(d.tree, since(all, toSeq), d.area.Path, d.rootDev)
		}
		for _, c := range visible(journal.Changes(inRange)) {
			// The changes name paths as the range left them (a removed
			// file's follows its directory); the old version is read
			// where what each is about was when the range began.
			v := versions{c: c, oldPath: c.Origin}
			if c.Origin != "" || c.Path == "" {
				if v.old, err = s.versionAt(then, c.Origin); err != nil {
					return err
				}
			}
			if v.new, err = s.versionAt(end, c.Path); err != nil {
				return err
			}
			files = append(files, v)
		}
		return nil
	}()
	if err != nil {
		return ctl.Diff{}, apiError(err)
	}
	for _, f := range files {
		out.Files = append(out.Files, diffFile(f.c, f.oldPath, f.old, f.new, req.Stat))
	}
	return out, nil
}

// since returns the records of recs (newest first) at or after seq.
func since(recs []*journal.Record, seq uint64) []*journal.Record {
	n := sort.Search(len(recs), func(i int) bool { return recs[i].Seq < seq })
	return recs[:n]
}

// version is one side of a file's diff.
type version struct {
	exists   bool
	typ      uint32
	content  []byte // regular files up to MaxDiffBytes
	tooLarge bool
	target   string // symlinks
}

// versionAt reads path as it was at at's time.
func (s *service) versionAt(at *rollback.At, path string) (version, error) {
	d := s.d
	v, err := at.Find(path)
	if err != nil || !v.Exists {
		return version{}, err
	}
	out := version{exists: true, typ: v.Type}
	switch v.Type {
	case syscall.S_IFLNK:
		out.target, _ = d.tree.Readlink(v.Loc)
	case syscall.S_IFREG:
		// Stat first: a version over MaxDiffBytes is named, not shown,
		// so it is not copied (the gate is held: writes wait).
		src, err := v.Open(d.tree)
		if err != nil {
			return out, err
		}
		defer src.Close()
		fi, err := src.Stat()
		if err != nil {
			return out, err
		}
		if v.Size(fi.Size()) > ctl.MaxDiffBytes {
			out.tooLarge = true
			return out, nil
		}
		tmp, err := os.CreateTemp(d.loc.Dir, "diff-*")
		if err != nil {
			return out, err
		}
		os.Remove(tmp.Name())
		defer tmp.Close()
		if err := v.MaterializeFrom(src, d.j, tmp); err != nil {
			return out, err
		}
		tmp.Seek(0, io.SeekStart)
		b, err := io.ReadAll(io.LimitReader(tmp, ctl.MaxDiffBytes+1))
		if err != nil {
			return out, err
		}
		out.content, out.tooLarge = b, len(b) > ctl.MaxDiffBytes
	}
	return out, nil
}

// diffFile compares the two versions of a changed path; oldPath is
// where the old one was.
func diffFile(c journal.Change, oldPath string, old, new version, stat bool) ctl.DiffFile {
	f := ctl.DiffFile{Path: ctl.Path(c.Path), Status: c.Kind}
	if c.Kind == journal.Renamed {
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
	case old.exists && !new.exists && c.Kind != journal.Deleted:
		f.Status = journal.Deleted
	case !old.exists && new.exists && c.Kind != journal.Created:
		f.Status = journal.Created
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
