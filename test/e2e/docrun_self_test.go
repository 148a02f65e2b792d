package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsRunnerCatches: the runner of TestDocs can fail. On documents
// written here, it carries variables and the working directory from
// block to block and fills in placeholders; it reports a block whose
// command fails (in a pipeline too, or before a line that succeeds), an
// error reply to curl, and every plan entry that matches nothing; and it
// refuses a code block that is neither sh nor json.
func TestDocsRunnerCatches(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error": {"code": "not_found", "message": "no turn \"17\""}}`, http.StatusNotFound)
	}))
	defer api.Close()
	env := append(os.Environ(), "PATH="+docBin(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	doc := func(name, text string) docPlan {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return docPlan{doc: name, path: path, dir: dir}
	}

	good := doc("good.md", "# good\n\n```sh\nX=one\ncd /\n```\n\n```json\n{\"a reply\": \"not run\"\n```\n\n"+
		"```sh\ntest \"$X\" = one && test \"$(pwd)\" = /   # carried over\ntest PLACE = filled\nskip me\n```\n")
	good.replace = []docReplace{{"PLACE", "filled", "a placeholder"}}
	good.skip = []docSkip{{"good.md", "skip me", "not a command"}}
	if problems := runDoc(t, good, env); len(problems) != 0 {
		t.Errorf("a document whose blocks succeed: %q", problems)
	}

	bad := doc("bad.md", "# bad\n\n```sh\nfalse | true\n```\n\n```sh\nfalse\necho after\n```\n\n"+
		"```sh\ncurl -s "+api.URL+"/v1/content?at=17\n```\n")
	bad.replace = []docReplace{{"ABSENT", "x", "a placeholder no block has"}}
	bad.skip = []docSkip{{"bad.md", "gone", "a line no block has"}}
	bad.timed = []string{"gone too"}
	bad.background = []docBackground{{"never there", func() bool { return true }}}
	problems := runDoc(t, bad, env)
	for _, want := range []string{
		"bad.md:4: the block failed",
		"bad.md:8: the block failed",
		"bad.md:13: the block failed",
		`the placeholder "ABSENT"`,
		`the skipped line "gone"`,
		`the streaming line "gone too"`,
		`the background line "never there"`,
	} {
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("no problem says %q; the problems: %q", want, problems)
		}
	}
	if len(problems) != 7 {
		t.Errorf("%d problems, want 7: %q", len(problems), problems)
	}
	if len(problems) > 2 && !strings.Contains(problems[2], `no turn \"17\"`) {
		t.Errorf("the error reply is not in the report: %q", problems[2])
	}

	other := doc("other.md", "# other\n\n```bash\nrm -rf /\n```\n")
	if problems := runDoc(t, other, env); len(problems) != 1 || !strings.Contains(problems[0], "other.md:3: a ```bash block") {
		t.Errorf("a bash block: %q", problems)
	}
}
