package mcpserver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

// The readable side of each result: what a model (or a person reading
// the transcript) sees as the tool's text content. The structured
// content holds the same facts, complete.

// maxListed bounds the paths a text lists; the structured content has
// them all.
const maxListed = 200

func logText(r LogResult) string {
	var b strings.Builder
	if len(r.Turns) == 0 {
		b.WriteString("no turns in the window\n")
	}
	for _, t := range r.Turns {
		fmt.Fprintf(&b, "turn %d%s: %s, began %s, %d %s changed", t.Num, idAnchor(t.ID, t.Anchor), t.State,
			stamp(t.BeganAt), t.ChangedPaths, human.Plural(t.ChangedPaths, "path", "paths"))
		if t.NotAgentPaths > 0 {
			fmt.Fprintf(&b, " (+%d by other processes)", t.NotAgentPaths)
		}
		b.WriteByte('\n')
	}
	if r.OutsideTurns > 0 {
		fmt.Fprintf(&b, "%d %s changed outside turns\n", r.OutsideTurns, human.Plural(r.OutsideTurns, "path", "paths"))
	}
	if t := r.OpenTurn; t != nil {
		fmt.Fprintf(&b, "turn %d is open: rollbacks wait until it ends\n", t.Num)
	}
	if r.Unrevertable > 0 {
		b.WriteString("the last rollback can be undone with unrevert (until the next turn begins)\n")
	}
	return b.String()
}

func showText(r ShowResult) string {
	var b strings.Builder
	ended := ""
	if r.EndedAt != nil {
		ended = ", ended " + stamp(*r.EndedAt)
	}
	fmt.Fprintf(&b, "turn %d%s: %s, began %s%s; %d %s changed\n", r.Num, idAnchor(r.ID, r.Anchor), r.State, stamp(r.BeganAt), ended,
		r.ChangedPaths, human.Plural(r.ChangedPaths, "path", "paths"))
	byPath := map[ctl.Path][]ctl.Change{}
	for _, ch := range r.Changes {
		byPath[ch.Path] = append(byPath[ch.Path], ch)
	}
	listed := 0
	for _, st := range r.Steps {
		if st.Step == "" {
			b.WriteString("before any step:\n")
		} else {
			fmt.Fprintf(&b, "step %s:\n", human.Shown(st.Step))
		}
		for _, p := range st.Paths {
			for _, ch := range byPath[p] {
				if ch.Step != st.Step {
					continue
				}
				if listed++; listed > maxListed {
					continue
				}
				b.WriteString("  " + changeLine(ch) + "\n")
			}
		}
	}
	if listed > maxListed {
		fmt.Fprintf(&b, "… and %d more (all are in the structured result)\n", listed-maxListed)
	}
	return b.String()
}

func changeLine(ch ctl.Change) string {
	path := human.Shown(string(ch.Path))
	if ch.From != "" {
		path = human.Shown(string(ch.From)) + " -> " + path
	}
	if ch.Type == "dir" {
		path += "/"
	}
	who := fmt.Sprintf("pid %d", ch.Pid)
	if ch.Command != "" {
		who = human.Shown(ch.Command) + " " + who
	}
	switch {
	case ch.Outside && ch.Pid == 0:
		who = "outside the mount"
	case !ch.ByAgent():
		who += ", not the agent's"
	}
	return fmt.Sprintf("%s %s (%s journaled; %s)", ch.Kind, path, human.Bytes(ch.Bytes), who)
}

func diffText(r DiffResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff from %s to %s: %d %s\n", r.From, r.To, len(r.Files), human.Plural(len(r.Files), "file", "files"))
	for _, f := range r.Files {
		name := human.Shown(string(f.Path))
		if f.From != "" {
			name = human.Shown(string(f.From)) + " -> " + name
		}
		fmt.Fprintf(&b, "%s %s +%d -%d", f.Status, name, f.Added, f.Removed)
		switch {
		case f.Binary:
			b.WriteString(" (binary)")
		case f.TooLarge:
			b.WriteString(" (too large to diff)")
		case f.Note != "":
			b.WriteString(" (" + f.Note + ")")
		}
		if f.Agent != nil && !*f.Agent {
			b.WriteString(" (not the agent's)")
		}
		b.WriteByte('\n')
		if f.Diff != "" {
			b.WriteString(f.Diff)
			if !strings.HasSuffix(f.Diff, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	if r.Cut {
		b.WriteString("the diff was cut to fit: ask for fewer paths to see the rest\n")
	}
	return b.String()
}

func catText(r CatResult) string {
	head := fmt.Sprintf("%s as it was when turn %s began (%s)", human.Shown(string(r.Path)), r.Turn, human.Bytes(r.Size))
	switch {
	case r.Binary:
		return head + ": binary, not shown\n"
	case r.Cut:
		return head + ", first " + human.Bytes(int64(len(r.Content))) + ":\n" + r.Content
	}
	return head + ":\n" + r.Content
}

func markersText(l ctl.MarkerList) string {
	if len(l.Markers) == 0 {
		return "no markers\n"
	}
	var b strings.Builder
	for _, m := range l.Markers {
		fmt.Fprintf(&b, "marker at turn %d%s, %s: %s\n", m.Turn, idAnchor(m.ID, m.Anchor), stamp(m.CreatedAt), m.Note)
		for _, r := range m.Replaces {
			fmt.Fprintf(&b, "  replaces the marker at turn %d%s\n", r.Turn, idAnchor(r.ID, r.Anchor))
		}
	}
	return b.String()
}

func previewText(r PreviewResult, force bool) string {
	var b strings.Builder
	b.WriteString(summary(r.RollbackResult) + "\n")
	pathLines(&b, r.Paths, true)
	args := fmt.Sprintf("turn %d", r.Target)
	if force {
		args += ", force true"
	}
	fmt.Fprintf(&b, "to do it: rollback with %s and token %s (or undo with that token, if turn %d is the latest); refused if the plan changes first\n", args, r.Token, r.Target)
	return b.String()
}

func rollbackText(r ctl.RollbackResult) string {
	var b strings.Builder
	b.WriteString(summary(r) + "\n")
	pathLines(&b, r.Paths, false)
	if m := r.Marker; m != nil {
		fmt.Fprintf(&b, "marker: turn %d%s: %s\n", m.Turn, idAnchor(m.ID, m.Anchor), m.Note)
	}
	switch {
	case !r.Complete:
		b.WriteString("the rollback did not finish and left no marker: run the same rollback again (it retries the failed step), or unrevert to undo what it did\n")
	case !r.Unrevert:
		b.WriteString("unrevert puts it all back, until the next turn begins\n")
	}
	return b.String()
}

// pathLines lists a plan's paths: all of them (up to maxListed) for a
// preview, those skipped or noted for a rollback done.
func pathLines(b *strings.Builder, paths []ctl.PathAction, all bool) {
	listed := 0
	for _, p := range paths {
		if !all && p.Action != ctl.ActionSkip && p.Note == "" && !p.Retried {
			continue
		}
		if listed++; listed > maxListed {
			continue
		}
		name := human.Shown(string(p.Path))
		if p.Type == "dir" {
			name += "/"
		}
		why := ""
		switch {
		case p.Reason != "":
			why = " (" + p.Reason + ")"
		case p.Note != "":
			why = " (" + p.Note + ")"
		case p.Retried:
			why = " (retried: an earlier rollback skipped it)"
		case p.From != "":
			why = " (renamed back from " + human.Shown(string(p.From)) + ")"
		case p.To != "":
			why = " (renamed back to " + human.Shown(string(p.To)) + ")"
		}
		fmt.Fprintf(b, "  %s %s%s\n", p.Action, name, why)
	}
	if listed > maxListed {
		fmt.Fprintf(b, "  … and %d more (all are in the structured result)\n", listed-maxListed)
	}
}

func summary(r ctl.RollbackResult) string {
	c := r.Counts
	counts := fmt.Sprintf("%d restored, %d recovered, %d deleted, %d skipped", c.Restored, c.Recovered, c.Deleted, c.Skipped)
	if c.DirsRemoved > 0 || c.DirsRecreated > 0 {
		counts += fmt.Sprintf("; directories: %d removed, %d recreated", c.DirsRemoved, c.DirsRecreated)
	}
	switch {
	case !r.Complete && !r.DryRun:
		return fmt.Sprintf("PARTIAL rollback to before turn %d, stopped at a failure: %s; done so far: %s", r.Target, r.Failure, counts)
	case r.DryRun:
		return fmt.Sprintf("a rollback to before turn %d would: %s", r.Target, counts)
	case r.Unrevert:
		return fmt.Sprintf("unreverted the rollback to before turn %d: %s", r.Target, counts)
	}
	return fmt.Sprintf("rolled back to before turn %d: %s", r.Target, counts)
}

func unrevertPreviewText(p UnrevertPreview) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s since the last turn began; unrevert undoes the last one: the workspace goes back to how it was just before it, and its marker is withdrawn\n",
		p.Unrevertable, human.Plural(p.Unrevertable, "rollback", "rollbacks"))
	if len(p.Reverted) > 0 {
		var nums []string
		for _, t := range p.Reverted {
			nums = append(nums, strconv.FormatUint(t.Num, 10))
		}
		fmt.Fprintf(&b, "turns rolled back now: %s\n", strings.Join(nums, ", "))
	}
	b.WriteString(markersText(ctl.MarkerList{Markers: p.Markers}))
	fmt.Fprintf(&b, "to do it: unrevert with token %s; refused if another rollback, unrevert or turn comes first\n", p.Token)
	return b.String()
}

func idAnchor(id, anchor string) string {
	var parts []string
	if id != "" {
		parts = append(parts, "id "+human.Shown(id))
	}
	if anchor != "" {
		parts = append(parts, "anchor "+human.Shown(anchor))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
