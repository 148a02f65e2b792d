package deploy

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The recipe's cowfs command lines are checked against the cowfs this
// tree builds: its help names the subcommands and flags, and says which
// flags take a value. Asking the binary, not a copy of its flag names,
// means a renamed or removed flag fails here.

var cowfsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cowfs-deploy-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cowfsBin = filepath.Join(dir, "cowfs")
	build := exec.Command("go", "build", "-o", cowfsBin, "github.com/cowfs/cowfs/cmd/cowfs")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cowfs:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A command is what cowfs's help says of one command.
type command struct {
	path  string          // "cowfs run"
	subs  []string        // its subcommands
	flags map[string]bool // --name and -x: whether it takes a value
}

var (
	helpMu    sync.Mutex
	helpCache = map[string]*command{}
)

// Flags lines of cobra's help: "  -w, --workspace string   the…",
// "      --turn                    run…" (no value).
var flagLine = regexp.MustCompile(`^\s+(?:-([A-Za-z0-9]), )?--([a-z0-9][a-z0-9-]*)(?: (\S+))?(?:\s{2,}|$)`)

// help returns what 'cowfs PATH… --help' says.
func help(t *testing.T, path []string) *command {
	t.Helper()
	key := strings.Join(path, " ")
	helpMu.Lock()
	defer helpMu.Unlock()
	if c := helpCache[key]; c != nil {
		return c
	}
	out, err := exec.Command(cowfsBin, append(slices.Clone(path), "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("cowfs %s --help: %v\n%s", key, err, out)
	}
	c := &command{path: strings.TrimSpace("cowfs " + key), flags: map[string]bool{}}
	section := ""
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, " ") {
			section = strings.TrimSuffix(l, ":")
			continue
		}
		switch section {
		case "Available Commands":
			if f := strings.Fields(l); len(f) > 0 {
				c.subs = append(c.subs, f[0])
			}
		case "Flags", "Global Flags":
			m := flagLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			c.flags["--"+m[2]] = m[3] != ""
			if m[1] != "" {
				c.flags["-"+m[1]] = m[3] != ""
			}
		}
	}
	if len(c.flags) == 0 {
		t.Fatalf("cowfs %s --help lists no flags: the help parser is broken\n%s", key, out)
	}
	helpCache[key] = c
	return c
}

// An invocation is a cowfs command line resolved against the help.
type invocation struct {
	cmd        *command
	flags      map[string][]string // each flag given, with its values ("" for a flag that takes none)
	positional []string
	rest       []string // after "--" (cowfs run's COMMAND)
}

// value returns the last value given to flag (--name or -x), or "".
func (inv invocation) value(flag string) string {
	if v := inv.flags[flag]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// resolve parses words, what follows "cowfs", as cobra would: the
// subcommands, then flags and their values, up to "--" or, for cowfs
// run, the first word of COMMAND. A flag the command does not have is an
// error.
func resolve(t *testing.T, words []string) (invocation, error) {
	t.Helper()
	var path []string
	cmd := help(t, nil)
	inv := invocation{flags: map[string][]string{}}
	var seen []string
	add := func(name, v string) {
		seen = append(seen, name)
		inv.flags[name] = append(inv.flags[name], v)
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			inv.rest = words[i+1:]
			i = len(words)
		case strings.HasPrefix(w, "--"):
			name, v, hasValue := strings.Cut(w, "=")
			if cmd.flags[name] && !hasValue && i+1 < len(words) {
				i++
				v = words[i]
			}
			add(name, v)
		case strings.HasPrefix(w, "-") && len(w) > 1:
			name := w[:2]
			v := w[2:]
			if cmd.flags[name] && v == "" && i+1 < len(words) {
				i++
				v = words[i]
			}
			add(name, v)
		case len(inv.positional) == 0 && slices.Contains(cmd.subs, w):
			path = append(path, w)
			cmd = help(t, path)
		default:
			if cmd.path == "cowfs run" {
				// Flags end at COMMAND (SetInterspersed(false)).
				inv.rest = words[i:]
				i = len(words)
				continue
			}
			inv.positional = append(inv.positional, w)
		}
	}
	inv.cmd = cmd
	if len(path) == 0 {
		return inv, errors.New("names no cowfs command")
	}
	for _, f := range seen {
		if _, ok := cmd.flags[f]; !ok && f != "--help" && f != "-h" {
			return inv, fmt.Errorf("%s has no flag %s", cmd.path, f)
		}
	}
	return inv, nil
}

// shellCommands splits shell text into simple commands, as word lists:
// at newlines, ;, &, | and the shell's loop and condition keywords,
// with quotes removed and redirections dropped. Enough for the recipe's
// scripts and README; it expands nothing.
func shellCommands(script string) [][]string {
	var cmds [][]string
	var cur []string
	var word strings.Builder
	inWord := false
	var quote rune
	endWord := func() {
		if inWord {
			cur = append(cur, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCmd := func() {
		endWord()
		var kept []string
		for _, w := range cur {
			if strings.ContainsAny(w, "<>") {
				continue // a redirection: >/dev/null, 2>&1
			}
			kept = append(kept, w)
		}
		for len(kept) > 0 && slices.Contains([]string{"until", "while", "do", "done", "if", "then", "else", "fi", "exec", "!", "$"}, kept[0]) {
			kept = kept[1:]
		}
		if len(kept) > 0 {
			cmds = append(cmds, kept)
		}
		cur = nil
	}
	rs := []rune(script)
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
		case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			i++ // a continued line
		case r == '#' && !inWord:
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
			endCmd()
		case strings.ContainsRune("\n;&|()", r):
			endCmd()
		case r == ' ' || r == '\t':
			endWord()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	endCmd()
	return cmds
}

// cowfsWords returns, for each cowfs invocation in cmds, the words that
// follow "cowfs": a command whose program is cowfs, or cowfs after the
// "--" of another (kubectl exec POD -- cowfs …).
func cowfsWords(cmds [][]string) [][]string {
	var out [][]string
	for _, c := range cmds {
		for i, w := range c {
			if w == "cowfs" && (i == 0 || c[i-1] == "--") {
				out = append(out, c[i+1:])
				break
			}
		}
	}
	return out
}

// TestCommandCheckerRefuses keeps the checker honest on lines that must
// fail, and passes lines that must pass.
func TestCommandCheckerRefuses(t *testing.T) {
	for _, bad := range []string{
		"cowfs rnu -w /workspace -- sh",
		"cowfs run -w /workspace --turnn -- sh",
		"cowfs -w /workspace events --follw",
		"cowfs -w /workspace turn begin --idd x",
	} {
		ws := cowfsWords(shellCommands(bad))
		if len(ws) != 1 {
			t.Fatalf("%q: %d invocations", bad, len(ws))
		}
		if _, err := resolve(t, ws[0]); err == nil {
			t.Errorf("%q passes", bad)
		}
	}
	good := `until cowfs -w /workspace status >/dev/null 2>&1; do sleep 1; done
kubectl exec pod -c harness -- cowfs -w /workspace turn begin --id call-1 # a comment
cowfs run -w /ws --window 3 --turn sh -c 'x --nope'`
	ws := cowfsWords(shellCommands(good))
	if len(ws) != 3 {
		t.Fatalf("%d invocations in %q", len(ws), good)
	}
	for _, w := range ws {
		if _, err := resolve(t, w); err != nil {
			t.Errorf("%q: %v", w, err)
		}
	}
	inv, _ := resolve(t, ws[2])
	if inv.value("--window") != "3" || len(inv.flags["--turn"]) != 1 || strings.Join(inv.rest, " ") != "sh -c x --nope" {
		t.Errorf("%q resolved as %+v", ws[2], inv)
	}
}
