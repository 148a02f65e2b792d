package mcpserver

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cowfs/cowfs/ctl"
)

// LogResult is the log tool's result: the turns in the window.
type LogResult struct {
	Workspace string `json:"workspace"`
	// OpenTurn is the turn open now, if any: rollbacks wait until it
	// ends.
	OpenTurn *ctl.Turn `json:"open_turn,omitempty"`
	// Turns are oldest first.
	Turns []ctl.Turn `json:"turns"`
	// OutsideTurns counts paths changed while no turn was open.
	OutsideTurns int `json:"outside_turns"`
	// Unrevertable counts the rollbacks since the last turn began; if
	// not zero, unrevert can undo the latest.
	Unrevertable int `json:"unrevertable"`
}

func (s *Server) log(ctx context.Context, c *ctl.Client, _ noInput) (LogResult, string, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return LogResult{}, "", err
	}
	l, err := c.Turns(ctx)
	if err != nil {
		return LogResult{}, "", err
	}
	res := LogResult{Workspace: st.Workspace, OpenTurn: st.OpenTurn, Turns: l.Turns, OutsideTurns: l.OutsideTurns, Unrevertable: st.Unrevertable}
	if res.Turns == nil {
		res.Turns = []ctl.Turn{}
	}
	return res, logText(res), nil
}

// ShowResult is the show tool's result: the turn, its changes (sorted
// by path), and the same paths by step.
type ShowResult struct {
	ctl.TurnDetail
	// Steps group the paths by the step (tool call) that first changed
	// each, in the order the steps began.
	Steps []StepPaths `json:"steps"`
}

// StepPaths are the paths a step changed first.
type StepPaths struct {
	// Step is the step's id; empty for changes before the turn's first
	// step (or in a turn without steps).
	Step  string     `json:"step"`
	Paths []ctl.Path `json:"paths"`
}

func (s *Server) show(ctx context.Context, c *ctl.Client, in showInput) (ShowResult, string, error) {
	d, err := c.Turn(ctx, string(in.Turn), in.Step)
	if err != nil {
		return ShowResult{}, "", err
	}
	if d.Changes == nil {
		d.Changes = []ctl.Change{}
	}
	res := ShowResult{TurnDetail: d, Steps: byStep(d.Changes)}
	return res, showText(res), nil
}

// byStep groups changes by step, steps in the order their first change
// was made.
func byStep(changes []ctl.Change) []StepPaths {
	idx := map[string]int{}
	var groups []StepPaths
	order := append([]ctl.Change(nil), changes...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Time.Before(order[j].Time) })
	for _, ch := range order {
		i, ok := idx[ch.Step]
		if !ok {
			i = len(groups)
			idx[ch.Step] = i
			groups = append(groups, StepPaths{Step: ch.Step, Paths: []ctl.Path{}})
		}
		groups[i].Paths = append(groups[i].Paths, ch.Path)
	}
	for i := range groups {
		slices.Sort(groups[i].Paths)
	}
	if groups == nil {
		groups = []StepPaths{}
	}
	return groups
}

// DiffResult is the diff tool's result.
type DiffResult struct {
	ctl.Diff
	// Cut: the diff text was longer than the tool returns; files whose
	// text is left out have no diff and a note. Ask for fewer paths.
	Cut bool `json:"cut,omitempty"`
}

// maxDiffText bounds the diff text one call returns, so one large diff
// does not flood the model's context; the paths filter narrows it.
const maxDiffText = 64 << 10

func (s *Server) diff(ctx context.Context, c *ctl.Client, in diffInput) (DiffResult, string, error) {
	d, err := c.Diff(ctx, ctl.DiffRequest{From: in.Turn, To: string(in.To), Step: in.Step, Stat: in.Stat})
	if err != nil {
		return DiffResult{}, "", err
	}
	res := DiffResult{Diff: d}
	res.Files = []ctl.DiffFile{}
	var filter []string
	for _, p := range in.Paths {
		filter = append(filter, s.relative(p))
	}
	budget := maxDiffText
	for _, f := range d.Files {
		if !selected(filter, string(f.Path)) && !(f.From != "" && selected(filter, string(f.From))) {
			continue
		}
		if len(f.Diff) > budget {
			f.Diff, f.Note, res.Cut = "", "diff left out: the output is limited; ask for this path alone", true
		}
		budget -= len(f.Diff)
		res.Files = append(res.Files, f)
	}
	return res, diffText(res), nil
}

// selected reports whether path is one of filter or beneath one; an
// empty filter selects every path.
func selected(filter []string, path string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if f == "" || f == "." || path == f || strings.HasPrefix(path, strings.TrimSuffix(f, "/")+"/") {
			return true
		}
	}
	return false
}

// relative turns a path given as absolute, inside the workspace, into
// the workspace-relative path the daemon takes; a model often passes
// the paths it works with.
func (s *Server) relative(p string) string {
	if filepath.IsAbs(p) && s.opts.Workspace != "" {
		if rel, err := filepath.Rel(s.opts.Workspace, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return rel
		}
	}
	return strings.TrimPrefix(filepath.Clean(p), "./")
}

// CatResult is the cat tool's result.
type CatResult struct {
	Turn string   `json:"turn"`
	Path ctl.Path `json:"path"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Content is the file's text, absent for a binary file (not valid
	// UTF-8, or holding NUL bytes); cut to its first maxCat bytes if
	// Cut.
	Content string `json:"content,omitempty"`
	Binary  bool   `json:"binary,omitempty"`
	Cut     bool   `json:"cut,omitempty"`
}

// maxCat bounds the content cat returns.
const maxCat = 256 << 10

func (s *Server) cat(ctx context.Context, c *ctl.Client, in catInput) (CatResult, string, error) {
	rel := s.relative(in.Path)
	r, err := c.Content(ctx, string(in.Turn), rel)
	if err != nil {
		return CatResult{}, "", err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxCat))
	if err != nil {
		return CatResult{}, "", err
	}
	rest, err := io.Copy(io.Discard, r)
	if err != nil {
		return CatResult{}, "", err
	}
	res := CatResult{Turn: string(in.Turn), Path: ctl.Path(rel), Size: int64(len(b)) + rest, Cut: rest > 0}
	if text := string(b); utf8.ValidString(trimPartialRune(text, res.Cut)) && !strings.ContainsRune(text, 0) {
		res.Content = trimPartialRune(text, res.Cut)
	} else {
		res.Binary, res.Cut = true, false
	}
	return res, catText(res), nil
}

// trimPartialRune drops a rune the cut split at the end of s.
func trimPartialRune(s string, cut bool) string {
	if !cut {
		return s
	}
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

func (s *Server) markers(ctx context.Context, c *ctl.Client, _ noInput) (ctl.MarkerList, string, error) {
	l, err := c.Markers(ctx)
	if err != nil {
		return ctl.MarkerList{}, "", err
	}
	if l.Markers == nil {
		l.Markers = []ctl.Marker{}
	}
	return l, markersText(l), nil
}
