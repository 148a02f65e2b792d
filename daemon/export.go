package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/rollback"
)

// Exporting what a journal still holds: when a journal is damaged (a
// pack file lost, a disk error) a rollback may be out of reach, but
// most of what it keeps can still be read. Export writes it out of the
// journal, into a directory of the user's, in forms that need no cowfs:
//
//	markers.json   the conversation truncation markers
//	turns.json     the turns in the window: numbers, ids, anchors, times
//	index.json     for each path a turn in the window changed, what it
//	               held when the latest turn that changed it began — the
//	               newest state a rollback could restore — and where
//	               that is in files/ (or why it is not)
//	files/N        the content of a regular file of index.json
//
// Files are numbered, never named after workspace paths, so no name in
// the workspace can make the export write anywhere but its directory.
// The directory is made 0700: pre-images can hold secrets. Export
// changes nothing the journal holds and writes nothing to the workspace.

// ExportedPath is one entry of index.json.
type ExportedPath struct {
	Path ctl.Path `json:"path"`
	// Turn is the latest turn in the window that changed the path; the
	// entry is what it held when that turn began.
	Turn uint64 `json:"turn"`
	// State: file, dir, symlink, other (a device, FIFO or socket),
	// absent (nothing was there: the turn created it), or unreadable.
	State  string `json:"state"`
	File   string `json:"file,omitempty"`   // files/N, for a file
	Size   int64  `json:"size,omitempty"`   // a file's
	Target string `json:"target,omitempty"` // a symlink's
	// Problem says why an unreadable path cannot be exported.
	Problem string `json:"problem,omitempty"`
}

// ExportReport is what Export wrote.
type ExportReport struct {
	Dir        string         `json:"dir"`
	Markers    int            `json:"markers"`
	Turns      int            `json:"turns"`
	Paths      []ExportedPath `json:"paths"`
	Unreadable int            `json:"unreadable"`
}

// Export writes what the journal of the workspace at path holds into
// dir, which must not exist yet (or be empty) and must be outside the
// workspace. Like Check it needs no daemon, and fails with
// ErrJournalLocked while one holds the journal.
func Export(path, dir string) (ExportReport, error) {
	loc, jdir, err := findJournal(path)
	if err != nil {
		return ExportReport{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ExportReport{}, err
	}
	if under(resolved(abs), loc.Workspace) {
		return ExportReport{}, fmt.Errorf("export into %s, inside the workspace %s: choose a directory outside it", abs, loc.Workspace)
	}
	j, err := journal.Open(jdir, journal.Options{Window: 1 << 30, MaxSize: -1})
	if err != nil {
		return ExportReport{}, err
	}
	defer j.Close()
	if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return ExportReport{}, fmt.Errorf("export: %w", err)
	}
	if ents, err := os.ReadDir(abs); err != nil {
		return ExportReport{}, fmt.Errorf("export: %w", err)
	} else if len(ents) > 0 {
		return ExportReport{}, fmt.Errorf("export: %s is not empty", abs)
	}
	files := filepath.Join(abs, "files")
	if err := os.Mkdir(files, 0o700); err != nil {
		return ExportReport{}, fmt.Errorf("export: %w", err)
	}
	rep := ExportReport{Dir: abs, Paths: []ExportedPath{}}
	markers, err := j.Markers()
	if err != nil {
		return rep, fmt.Errorf("export markers: %w", err)
	}
	rep.Markers = len(markers)
	if err := writeJSON(filepath.Join(abs, "markers.json"), markers); err != nil {
		return rep, err
	}
	turns, err := j.Turns()
	if err != nil {
		return rep, fmt.Errorf("export turns: %w", err)
	}
	rep.Turns = len(turns)
	if err := writeJSON(filepath.Join(abs, "turns.json"), turns); err != nil {
		return rep, err
	}

	root, err := unix.Open(loc.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return rep, fmt.Errorf("workspace %s: %w", loc.Workspace, err)
	}
	defer unix.Close(root)
	tree := backing.NewTree(root)
	st, err := backing.Fstat(root)
	if err != nil {
		return rep, err
	}
	x := &exporter{j: j, tree: tree, rootDev: st.Dev, files: files, rep: &rep}
	if err := x.paths(turns); err != nil {
		return rep, err
	}
	sort.Slice(rep.Paths, func(a, b int) bool { return rep.Paths[a].Path < rep.Paths[b].Path })
	return rep, writeJSON(filepath.Join(abs, "index.json"), rep.Paths)
}

type exporter struct {
	j       *journal.Journal
	tree    *backing.Tree
	rootDev uint64
	files   string
	rep     *ExportReport
	n       int
}

// paths exports each path the window's turns changed, as it was when
// the latest turn that changed it began.
func (x *exporter) paths(turns []journal.Turn) error {
	latest := map[string]uint64{}
	live := map[uint64]bool{}
	for _, t := range turns {
		live[t.Num] = true
	}
	err := x.j.Scan(0, 0, false, func(r *journal.Record) error {
		// (A change of a forgotten turn that a rollback skipped stays
		// in effect: journal.Settle. It is no live turn's.)
		if !live[r.Turn] || r.Group != 0 || r.Kind == journal.KindEvent || r.Kind == journal.KindOutside {
			return nil
		}
		for _, p := range []string{r.Path, r.Path2} {
			if p != "" && !aside.Private(p) {
				latest[p] = max(latest[p], r.Turn)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("export: records: %w", err)
	}
	byTurn := map[uint64][]string{}
	for p, t := range latest {
		byTurn[t] = append(byTurn[t], p)
	}
	// One pass back from the newest record: the turns newest first,
	// each turn's records undone into one model of the workspace, so
	// that when the pass reaches a turn's start the model is the
	// workspace as that turn began, and its paths are read from it.
	// (Turns apiece would each read every record after their start.)
	at := rollback.NewAt(x.j, x.tree, x.j.NextSeq(), func(name string) string { return aside.Prefix + name }, x.rootDev)
	upTo := x.j.NextSeq()
	var broken error // a pass that failed leaves every older turn unreadable
	for i := len(turns) - 1; i >= 0; i-- {
		t := turns[i]
		if broken == nil && t.StartSeq < upTo {
			err := x.j.Scan(t.StartSeq, upTo, true, func(r *journal.Record) error {
				at.Undo(r)
				return nil
			})
			if err != nil {
				broken = fmt.Errorf("the records since turn %d began: %v", t.Num, err)
			}
			upTo = t.StartSeq
		}
		paths := byTurn[t.Num]
		sort.Strings(paths)
		for _, p := range paths {
			e := ExportedPath{Path: ctl.Path(p), Turn: t.Num}
			if broken != nil {
				e.State, e.Problem = "unreadable", broken.Error()
			} else {
				x.one(&e, at, p)
			}
			if e.State == "unreadable" {
				x.rep.Unreadable++
			}
			x.rep.Paths = append(x.rep.Paths, e)
		}
	}
	return nil
}

// one fills in e: what p held at at's time.
func (x *exporter) one(e *ExportedPath, at *rollback.At, p string) {
	fail := func(err error) { e.State, e.Problem = "unreadable", err.Error() }
	v, err := at.Find(p)
	if err != nil {
		fail(err)
		return
	}
	switch {
	case !v.Exists:
		e.State = "absent"
	case v.Type == syscall.S_IFDIR:
		e.State = "dir"
	case v.Type == syscall.S_IFLNK:
		target, err := x.tree.Readlink(v.Loc)
		if err != nil {
			fail(err)
			return
		}
		e.State, e.Target = "symlink", target
	case v.Type != syscall.S_IFREG:
		e.State = "other"
	default:
		x.n++
		name := fmt.Sprint(x.n)
		f, err := os.OpenFile(filepath.Join(x.files, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			fail(err)
			return
		}
		defer f.Close()
		if err := v.Materialize(x.tree, x.j, f); err != nil {
			os.Remove(f.Name())
			fail(err)
			return
		}
		fi, _ := f.Stat()
		e.State, e.File = "file", "files/"+name
		if fi != nil {
			e.Size = fi.Size()
		}
	}
}

// under reports whether p is dir or beneath it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
