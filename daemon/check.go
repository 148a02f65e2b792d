package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cowfs/cowfs/aside"
	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/journal"
)

// CheckReport is what Check found: what the journal holds, and every
// problem, one line each.
type CheckReport struct {
	Workspace string           `json:"workspace"`
	Journal   string           `json:"journal"`
	Turns     int              `json:"turns"`
	Records   int              `json:"records"`
	Content   int64            `json:"content_bytes"` // pre-image bytes read back
	Markers   []journal.Marker `json:"markers"`
	Problems  []string         `json:"problems"`
}

// Check reads everything the journal of the workspace at path holds —
// turns, markers, rollbacks and their plans, every record and every byte
// of pre-image content it names, every inode kept aside — and reports
// what cannot be read. It changes nothing the journal holds and writes
// nothing to the workspace, and needs no daemon; while one holds the
// journal it fails
// with ErrJournalLocked. A journal that cannot be opened at all is
// reported with journal.ErrUnreadable.
func Check(path string) (CheckReport, error) {
	loc, jdir, err := findJournal(path)
	if err != nil {
		return CheckReport{}, err
	}
	r := CheckReport{Workspace: loc.Workspace, Journal: jdir, Markers: []journal.Marker{}, Problems: []string{}}
	j, err := journal.Open(jdir, journal.Options{Window: 1 << 30, MaxSize: -1})
	if err != nil {
		return r, err
	}
	defer j.Close()
	problem := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }

	ts, err := j.Turns()
	if err != nil {
		problem("turns: %v", err)
	}
	r.Turns = len(ts)
	if r.Markers, err = j.Markers(); err != nil {
		problem("markers: %v", err)
	}
	rbs, err := j.Rollbacks()
	if err != nil {
		problem("rollbacks: %v", err)
	}
	for _, rb := range rbs {
		plan, err := j.RollbackPlan(rb.ID)
		if err == nil && !json.Valid(plan) {
			err = errors.New("not JSON")
		}
		if err != nil {
			problem("rollback %d (%s): plan: %v", rb.ID, rb.State, err)
		}
	}

	// Inodes kept aside are read through the workspace, never following
	// a link; a workspace that cannot be opened leaves them unchecked.
	var tree *backing.Tree
	if fd, err := unix.Open(loc.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		defer unix.Close(fd)
		tree = backing.NewTree(fd)
	} else {
		problem("workspace %s: %v (kept inodes not checked)", loc.Workspace, err)
	}
	// The inodes that must be in the aside area now: those records kept
	// there, less those a later record (a rollback's) moved out again.
	kept := map[string]*journal.Record{}
	err = j.Scan(0, 0, false, func(rec *journal.Record) error {
		r.Records++
		if rec.Kind == journal.KindData {
			err := j.ReadContent(rec, func(_ int64, b []byte) error {
				r.Content += int64(len(b))
				return nil
			})
			if err != nil {
				problem("record %d (turn %d, %s of %q): pre-image: %v", rec.Seq, rec.Turn, rec.Kind, rec.Path, err)
			}
		}
		if rec.Kind == journal.KindRename {
			if name, ok := strings.CutPrefix(rec.Path, aside.Prefix); ok {
				delete(kept, name) // moved back out
			}
		}
		if rec.Aside != "" {
			kept[rec.Aside] = rec
		}
		return nil
	})
	if err != nil {
		problem("records after %d: %v", r.Records, err)
	}
	if tree != nil {
		names := make([]string, 0, len(kept))
		for name := range kept {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			rec := kept[name]
			if _, err := tree.Lstat(aside.Prefix + name); errors.Is(err, fs.ErrNotExist) {
				problem("record %d (turn %d, %s of %q): the inode kept aside as %s is gone", rec.Seq, rec.Turn, rec.Kind, rec.Path, name)
			} else if err != nil {
				problem("record %d: kept inode %s: %v", rec.Seq, name, err)
			}
		}
	}
	return r, nil
}
