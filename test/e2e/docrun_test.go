package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// How TestDocs runs a document: its plan (what the reader fills in, what
// does not run here, what runs until stopped) and the run itself, which
// reports every block that errs and every entry of the plan that matches
// nothing any more.

// docPlan is how a document's blocks run here.
type docPlan struct {
	doc        string // its path, relative to the repository root
	path       string // where to read it, if not there
	dir        string // the working directory the first block starts in
	replace    []docReplace
	skip       []docSkip
	timed      []string // lines that run until the client stops them
	background []docBackground
}

// A docReplace is a placeholder a reader fills in (old), what the test
// puts there, and why.
type docReplace struct{ old, new, why string }

// A docSkip is a line of a document's blocks that does not run here,
// and why.
type docSkip struct{ doc, line, why string }

// A docBackground line runs until a later block stops it (a daemon in the
// foreground): it runs in the background, the blocks after it once ready
// says so, and it must have ended well by the end of the document.
type docBackground struct {
	line  string
	ready func() bool
}

// runDoc runs the document's ```sh blocks in order in one session and
// returns what went wrong: each block that erred (its document, line,
// text and output), and each entry of the plan that matched no line.
func runDoc(t *testing.T, p docPlan, env []string) (problems []string) {
	t.Helper()
	path := p.path
	if path == "" {
		path = filepath.Join(repoRoot(t), p.doc)
	}
	blocks, err := shBlocks(path, p.doc)
	if err != nil {
		return []string{err.Error()}
	}
	if len(blocks) == 0 {
		return []string{p.doc + " has no ```sh blocks: the extraction is broken"}
	}
	s := newDocSession(t, env, p.dir)
	used := map[string]bool{} // the plan's entries that matched a line
	replace := func(text string) string {
		for _, r := range p.replace {
			if strings.Contains(text, r.old) {
				used["replace "+r.old] = true
				text = strings.ReplaceAll(text, r.old, r.new)
			}
		}
		return text
	}
	type job struct {
		b docBlock
		j *docJob
	}
	var jobs []job
	for _, b := range blocks {
		var pending []string // lines to run before the next background one
		fail := func(out string, err error) {
			problems = append(problems, fmt.Sprintf("%s:%d: the block failed: %v\n$ %s\n%s",
				b.doc, b.line, err, strings.ReplaceAll(replace(b.text()), "\n", "\n$ "), out))
		}
		flush := func() bool {
			text := replace(strings.Join(pending, "\n"))
			pending = nil
			if strings.TrimSpace(text) == "" {
				return true
			}
			out, err := s.run(text, 5*time.Minute)
			if err != nil {
				fail(out, err)
				return false
			}
			return true
		}
		ok, skipped := true, 0
	lines:
		for _, l := range b.lines {
			line := strings.TrimSpace(l)
			for _, sk := range p.skip {
				if sk.line == line {
					used["skip "+line] = true
					pending = append(pending, "# skipped here: "+sk.why)
					skipped++
					continue lines
				}
			}
			for _, tm := range p.timed {
				if tm == line {
					used["timed "+line] = true
					// The newline ends a comment the line may have.
					pending = append(pending, "{ timeout 2 "+l+"\n} || [ $? -eq 124 ]")
					continue lines
				}
			}
			for _, bg := range p.background {
				if bg.line == line {
					used["background "+line] = true
					if ok = flush(); !ok {
						break lines
					}
					j, err := s.start(replace(l), bg.ready, 5*time.Minute)
					if err != nil {
						out := ""
						if j != nil {
							j.stop()
							out = j.out.String()
						}
						fail(out, err)
						ok = false
						break lines
					}
					jobs = append(jobs, job{b, j})
					continue lines
				}
			}
			pending = append(pending, l)
		}
		if ok && flush() {
			t.Logf("%s:%d: ran (%d of its lines skipped)", b.doc, b.line, skipped)
		}
	}
	for _, j := range jobs {
		if err := j.j.wait(30 * time.Second); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %q, run in the background, did not end well: %v\n%s",
				j.b.doc, j.b.line, j.j.text, err, j.j.out.String()))
		}
	}
	// A plan that names what is no longer there would skip or fill in
	// nothing while claiming to.
	for _, r := range p.replace {
		if !used["replace "+r.old] {
			problems = append(problems, fmt.Sprintf("%s: the placeholder %q (%s) is in no ```sh block any more", p.doc, r.old, r.why))
		}
	}
	for _, sk := range p.skip {
		if !used["skip "+sk.line] {
			problems = append(problems, fmt.Sprintf("%s: the skipped line %q is in no ```sh block any more", p.doc, sk.line))
		}
	}
	for _, tm := range p.timed {
		if !used["timed "+tm] {
			problems = append(problems, fmt.Sprintf("%s: the streaming line %q is in no ```sh block any more", p.doc, tm))
		}
	}
	for _, bg := range p.background {
		if !used["background "+bg.line] {
			problems = append(problems, fmt.Sprintf("%s: the background line %q is in no ```sh block any more", p.doc, bg.line))
		}
	}
	return problems
}
