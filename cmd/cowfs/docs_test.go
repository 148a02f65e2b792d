package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The documentation cannot drift from the CLI or the tree: every cowfs
// command line in README.md and docs/*.md — in a code block, or in
// backquotes in the text — names subcommands and flags this binary has,
// every relative link and anchor in them reaches a file and a heading that
// exist, the README's layout table names paths that exist, and the
// README's one test command is the one CI runs.

// docFiles are the documents checked, relative to the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		rel, _ := filepath.Rel(repoRoot, f)
		files = append(files, rel)
	}
	return files
}

const repoRoot = "../.."

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDocsCommandsExist(t *testing.T) {
	// Building the tree binds the commands' flags to their variables;
	// build it once more at the end so they are back at their defaults.
	t.Cleanup(func() { newRootCommand() })
	root := newRootCommand()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	checked := 0
	for _, doc := range docFiles(t) {
		for _, c := range docCommandLines(readDoc(t, doc)) {
			for _, words := range cowfsInvocations(c.text) {
				checked++
				if err := checkInvocation(root, words); err != "" {
					t.Errorf("%s:%d: %q: %s", doc, c.line, strings.Join(words, " "), err)
				}
			}
		}
	}
	t.Logf("%d cowfs command lines checked", checked)
	if checked < 50 {
		t.Fatalf("found only %d cowfs command lines in the docs: the extraction is broken", checked)
	}
}

// A docLine is shell text from a document: a code block's line (with its
// continuations), or a code span of the prose.
type docLine struct {
	line int
	text string
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// docCommandLines returns the lines of md's fenced code blocks, joined
// where they end in a backslash, and the code spans of its prose that
// begin with cowfs (found per paragraph, since a span may wrap).
func docCommandLines(md string) []docLine {
	var out []docLine
	inBlock := false
	continued := false // the last block line ended in a backslash
	para, paraLine := "", 0
	endPara := func() {
		for _, m := range codeSpan.FindAllStringSubmatch(para, -1) {
			if span := strings.Join(strings.Fields(m[1]), " "); span == "cowfs" || strings.HasPrefix(span, "cowfs ") {
				out = append(out, docLine{paraLine, span})
			}
		}
		para = ""
	}
	for i, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			endPara()
			inBlock = !inBlock
			continued = false
			continue
		}
		if !inBlock {
			if trimmed == "" {
				endPara()
				continue
			}
			if para == "" {
				paraLine = i + 1
			}
			para += l + "\n"
			continue
		}
		text := strings.TrimSuffix(trimmed, "\\")
		if continued {
			out[len(out)-1].text += " " + text
		} else {
			out = append(out, docLine{i + 1, text})
		}
		continued = strings.HasSuffix(trimmed, "\\")
	}
	endPara()
	return out
}

// cowfsInvocations splits a line of shell into simple commands and returns
// the words of each cowfs invocation in it: a command whose program is
// cowfs, or cowfs after a "--" (claude mcp add cowfs -- cowfs mcp). An
// invocation ends at its own "--", after which come another program's
// arguments. Words are unquoted, never expanded.
func cowfsInvocations(line string) [][]string {
	var out [][]string
	for _, cmd := range simpleCommands(line) {
		for len(cmd) > 0 && (strings.Contains(cmd[0], "=") && !strings.HasPrefix(cmd[0], "-") || cmd[0] == "sudo" || cmd[0] == "exec" || cmd[0] == "$") {
			cmd = cmd[1:]
		}
		start := -1
		for i := range cmd {
			if isCowfs(cmd[i]) && (i == 0 || cmd[i-1] == "--") {
				start = i
				break
			}
		}
		if start < 0 {
			continue
		}
		words := cmd[start+1:]
		if i := indexOf(words, "--"); i >= 0 {
			words = words[:i]
		}
		out = append(out, words)
	}
	return out
}

func isCowfs(w string) bool {
	return w == "cowfs" || strings.HasSuffix(w, "/cowfs") && !strings.Contains(w, "$")
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// simpleCommands tokenizes line as the shell would split it into words,
// without expanding anything, and splits it at unquoted ;, &, |, (, ),
// $( and comments.
func simpleCommands(line string) [][]string {
	var cmds [][]string
	var cur []string
	var word strings.Builder
	inWord := false
	flushWord := func() {
		if inWord {
			cur = append(cur, word.String())
			word.Reset()
			inWord = false
		}
	}
	flushCmd := func() {
		flushWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
	}
	var quote rune
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			word.WriteRune(rs[i])
			inWord = true
		case r == '#' && !inWord:
			flushCmd()
			return cmds
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			flushCmd()
			i++
		case strings.ContainsRune(";&|()`", r):
			flushCmd()
		case unicode.IsSpace(r):
			flushWord()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	flushCmd()
	return cmds
}

// placeholder reports whether w stands for something the reader supplies
// (N, WS, TURN, CMD, …) or elides arguments.
func placeholder(w string) bool {
	if w == "…" || w == "..." || strings.HasSuffix(w, "...") {
		return true
	}
	for _, r := range w {
		if !unicode.IsUpper(r) && !unicode.IsDigit(r) && r != '_' && r != '-' {
			return false
		}
	}
	return w != ""
}

// checkInvocation resolves words (what follows cowfs) against the command
// tree as cobra would, and says what does not exist, or "".
func checkInvocation(root *cobra.Command, words []string) string {
	cmd := root
	var flags []string
	positional := 0
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], "[]")
		switch {
		case w == "" || w == "-" || placeholder(w):
			positional++
		case strings.HasPrefix(w, "--"):
			name, _, hasValue := strings.Cut(w[2:], "=")
			// Usage lines write alternatives as --a|--b; each is a flag.
			flags = append(flags, "--"+name)
			if f := lookupFlag(cmd, name); f != nil && takesValue(f) && !hasValue {
				i++
			}
		case strings.HasPrefix(w, "-"):
			for j, r := range w[1:] {
				flags = append(flags, "-"+string(r))
				f := lookupShorthand(cmd, string(r))
				if f != nil && takesValue(f) {
					if j == len(w)-2 {
						i++ // the value is the next word
					}
					break
				}
			}
		default:
			if positional == 0 && cmd.HasSubCommands() {
				if sub := findSub(cmd, w); sub != nil {
					cmd = sub
					continue
				}
				if !cmd.Runnable() {
					return "no command " + strings.TrimPrefix(cmd.CommandPath()+" "+w, "cowfs ")
				}
			}
			positional++
		}
	}
	for _, fl := range flags {
		if strings.HasPrefix(fl, "--") {
			if lookupFlag(cmd, fl[2:]) == nil {
				return cmd.CommandPath() + " has no flag " + fl
			}
		} else if lookupShorthand(cmd, fl[1:]) == nil {
			return cmd.CommandPath() + " has no flag " + fl
		}
	}
	return ""
}

func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if name == "help" {
		return &pflag.Flag{Name: "help", NoOptDefVal: "true"}
	}
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		// --agent-* in the text: some flag of that name.
		var found *pflag.Flag
		each := func(f *pflag.Flag) {
			if strings.HasPrefix(f.Name, prefix) {
				found = f
			}
		}
		cmd.Flags().VisitAll(each)
		cmd.InheritedFlags().VisitAll(each)
		return found
	}
	for _, set := range []*pflag.FlagSet{cmd.Flags(), cmd.PersistentFlags(), cmd.InheritedFlags()} {
		if f := set.Lookup(name); f != nil {
			return f
		}
	}
	return nil
}

func lookupShorthand(cmd *cobra.Command, s string) *pflag.Flag {
	if s == "h" {
		return &pflag.Flag{Name: "help", NoOptDefVal: "true"}
	}
	for _, set := range []*pflag.FlagSet{cmd.Flags(), cmd.PersistentFlags(), cmd.InheritedFlags()} {
		if f := set.ShorthandLookup(s); f != nil {
			return f
		}
	}
	return nil
}

func takesValue(f *pflag.Flag) bool { return f.NoOptDefVal == "" }

func TestDocsCommandCheckerRefuses(t *testing.T) {
	t.Cleanup(func() { newRootCommand() })
	root := newRootCommand()
	for _, line := range []string{
		"cowfs rollbak 1",
		"cowfs rollback 1 --dry-runn",
		"cowfs turn begn --id x",
		"cowfs -w WS log -x",
		"claude mcp add cowfs -- cowfs mcp --nope",
	} {
		inv := cowfsInvocations(line)
		if len(inv) != 1 || checkInvocation(root, inv[0]) == "" {
			t.Errorf("%q passes", line)
		}
	}
	for _, line := range []string{
		"cowfs rollback 1 --dry-run",
		"cowfs -w ~/proj integrate claude-code --rewind N",
		"cowfs run -w \"$WS\" --turn -- setpriv --reuid 65534 my-agent --weird",
		"cd / && cowfs umount /path/to/workspace",
		"cowfs redo",
	} {
		inv := cowfsInvocations(line)
		if len(inv) != 1 {
			t.Errorf("%q: %d invocations", line, len(inv))
		} else if err := checkInvocation(root, inv[0]); err != "" {
			t.Errorf("%q: %s", line, err)
		}
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

func TestDocsLinksResolve(t *testing.T) {
	for _, doc := range docFiles(t) {
		md := readDoc(t, doc)
		for i, l := range strings.Split(stripCodeBlocks(md), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := doc
				if path != "" {
					file = filepath.Join(filepath.Dir(doc), path)
					if _, err := os.Stat(filepath.Join(repoRoot, file)); err != nil {
						t.Errorf("%s:%d: link to %s: %v", doc, i+1, target, err)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(file, ".md") {
					if !headingAnchors(readDoc(t, file))[anchor] {
						t.Errorf("%s:%d: link to %s: %s has no heading #%s", doc, i+1, target, file, anchor)
					}
				}
			}
		}
	}
}

// stripCodeBlocks blanks the lines of fenced code blocks, keeping line
// numbers: links are only links outside them.
func stripCodeBlocks(md string) string {
	lines := strings.Split(md, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
		} else if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// headingAnchors returns the anchors GitHub gives md's headings: lower
// case, punctuation dropped, spaces made hyphens, repeats numbered.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(stripCodeBlocks(md), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func TestReadmeLayoutPathsExist(t *testing.T) {
	readme := readDoc(t, "README.md")
	_, layout, ok := strings.Cut(readme, "## Layout")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	n := 0
	for _, l := range strings.Split(layout, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(l[1:], "|")
		for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
			n++
			if _, err := os.Stat(filepath.Join(repoRoot, m[1])); err != nil {
				t.Errorf("README.md's layout names %s: %v", m[1], err)
			}
		}
	}
	if n < 10 {
		t.Fatalf("README.md's layout table names only %d paths", n)
	}
}

// The README's test command is what CI runs, so the two cannot drift.
func TestReadmeTestCommandIsCIs(t *testing.T) {
	const command = "sh test/all.sh"
	readme := readDoc(t, "README.md")
	found := false
	for _, c := range docCommandLines(readme) {
		if c.text == command {
			found = true
		}
	}
	if !found {
		t.Errorf("README.md has no code block line %q", command)
	}
	ci := readDoc(t, ".ci/run")
	ran := false
	for _, l := range strings.Split(ci, "\n") {
		if strings.TrimSpace(l) == command {
			ran = true
		}
	}
	if !ran {
		t.Errorf(".ci/run does not run %q", command)
	}
}

// TestReadmeIsAGuide: the README stays a guide a newcomer reads in one
// sitting — what cowfs is, how to run, integrate and test it, where
// each part lives — under 200 lines; measurements and their history
// live in docs/performance.md, the why in docs/design.md (#35).
func TestReadmeIsAGuide(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= 200 {
		t.Errorf("README.md has %d lines; keep it under 200 (move detail to docs/)", n)
	}
}
