package e2e

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// No container engine runs here, so this test does what the
// Dockerfile's build stage does — the same go build line, read from the
// Dockerfile — and checks the result: a static binary (no interpreter,
// no shared library: it runs in any image it is copied into), built
// without the source paths (-trimpath), that runs cowfs run. It also
// checks the final stage is what the README says.
func TestDockerfileBuild(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	env, args := dockerBuildLine(t, string(df))
	out := filepath.Join(t.TempDir(), "cowfs")
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			args[i+1] = out
		}
	}
	build := exec.Command("go", args...)
	build.Dir = root
	build.Env = append(os.Environ(), env...)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}

	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary has an interpreter: it is not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries: %v", libs)
	}
	bin, _ := os.ReadFile(out)
	if bytes.Contains(bin, []byte(root+"/daemon")) {
		t.Errorf("the binary holds the source path %s: not built with -trimpath", root)
	}

	for _, want := range []string{
		`COPY --from=build /out/cowfs /usr/local/bin/cowfs`,
		`ENTRYPOINT ["cowfs", "run", "-w", "/workspace", "--"]`,
		`VOLUME /var/lib/cowfs`,
		`ENV COWFS_SOCKET_DIR=/run/cowfs`,
	} {
		if !strings.Contains(string(df), want) {
			t.Errorf("the Dockerfile has no line %q", want)
		}
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil || !strings.Contains(string(ignore), ".git\n") {
		t.Errorf(".dockerignore missing or lets .git in: %v", err)
	}

	// The static binary runs as the image's entrypoint would.
	w := newWorkspace(t)
	run := exec.Command(out, "run", "-w", w.dir, "--", "sh", "-c", "echo in > f")
	run.Env = append(w.env(), "COWFS_SOCKET_DIR="+filepath.Join(w.state, "sockets"))
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("the static cowfs run: %v: %s", err, b)
	}
	w.wantFile("after the static cowfs run", "f", "in\n")
}

// dockerBuildLine returns the environment and the go arguments of the
// Dockerfile's `RUN ... go build` line.
func dockerBuildLine(t *testing.T, dockerfile string) (env, args []string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(dockerfile))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "RUN" || !strings.Contains(sc.Text(), "go build") {
			continue
		}
		fields = fields[1:]
		for len(fields) > 0 && strings.Contains(fields[0], "=") {
			env, fields = append(env, fields[0]), fields[1:]
		}
		if len(fields) == 0 || fields[0] != "go" {
			t.Fatalf("the Dockerfile's build line is not ENV=… go build …: %q", sc.Text())
		}
		// -ldflags="-s -w": the shell's quotes, split by Fields.
		return env, joinQuoted(fields[1:])
	}
	t.Fatal("the Dockerfile has no RUN … go build line")
	return nil, nil
}

// joinQuoted joins arguments a shell would keep together because of
// double quotes, and drops the quotes.
func joinQuoted(fields []string) []string {
	var out []string
	for i := 0; i < len(fields); i++ {
		a := fields[i]
		if strings.Count(a, `"`) == 1 {
			for i+1 < len(fields) {
				i++
				a += " " + fields[i]
				if strings.Contains(fields[i], `"`) {
					break
				}
			}
		}
		out = append(out, strings.ReplaceAll(a, `"`, ""))
	}
	return out
}
