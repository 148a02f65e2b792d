package hook

import (
	"encoding/json"
	"strings"
	"testing"
)

func geminiCommands() map[string]string {
	cmds := map[string]string{}
	for _, ev := range GeminiEvents {
		cmds[ev] = Gemini.Command("/usr/local/bin/cowfs", "/src/my ws", ev)
	}
	return cmds
}

func TestAddGeminiHooksKeepsWhatIsThere(t *testing.T) {
	old := `{"theme": "dark", "hooks": {"BeforeTool": [{"matcher": "write_.*", "hooks": [{"type": "command", "command": "lint.sh", "name": "lint"}]}]}, "model": {"name": "x"}}`
	out, err := Gemini.Add([]byte(old), geminiCommands())
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if i, j, k := strings.Index(s, `"theme"`), strings.Index(s, `"hooks"`), strings.Index(s, `"model"`); !(i >= 0 && i < j && j < k) {
		t.Errorf("keys out of order or lost:\n%s", s)
	}
	var got struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Name, Command string
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	for _, ev := range GeminiEvents {
		defs := got.Hooks[ev]
		last := defs[len(defs)-1]
		if len(last.Hooks) != 1 || last.Hooks[0].Name != "cowfs" || last.Hooks[0].Command != geminiCommands()[ev] {
			t.Errorf("%s: %+v; want cowfs's hook last", ev, defs)
		}
	}
	if bt := got.Hooks["BeforeTool"]; len(bt) != 2 || bt[0].Hooks[0].Name != "lint" || bt[1].Matcher != ".*" {
		t.Errorf("BeforeTool: %+v; want lint kept, then cowfs's for every tool", bt)
	}
	if cmd := geminiCommands()[GeminiPrompt]; cmd != `/usr/local/bin/cowfs -w '/src/my ws' hook gemini BeforeAgent` {
		t.Errorf("command %q", cmd)
	}
	if evs, _ := Gemini.In(out); strings.Join(evs, " ") != "BeforeTool BeforeAgent AfterAgent SessionEnd" {
		t.Errorf("Gemini.In: %v", evs)
	}

	again, err := Gemini.Add(out, geminiCommands())
	if err != nil || string(again) != string(out) {
		t.Errorf("integrating twice changed the settings:\n%s\nthen\n%s", out, again)
	}

	removed, n, err := Gemini.Remove(out)
	if err != nil || n != len(GeminiEvents) {
		t.Fatalf("remove: %d, %v", n, err)
	}
	var a, b any
	json.Unmarshal([]byte(old), &a)
	json.Unmarshal(removed, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("--remove left\n%s\nwant\n%s", jb, ja)
	}
	if _, n, _ := Gemini.Remove(removed); n != 0 {
		t.Errorf("removing again took out %d", n)
	}
}

func TestRemoveGeminiHooksLeavesNothingOrTheOthers(t *testing.T) {
	out, err := Gemini.Add(nil, geminiCommands())
	if err != nil {
		t.Fatal(err)
	}
	removed, _, err := Gemini.Remove(out)
	if err != nil || strings.TrimSpace(string(removed)) != "{}" {
		t.Errorf("removing the only hooks left %q (%v); want {}", removed, err)
	}
	// A hook of the person's in the same definition as cowfs's stays.
	mixed := `{"hooks": {"AfterAgent": [{"hooks": [{"name": "cowfs", "type": "command", "command": "/bin/cowfs -w /ws hook gemini AfterAgent"}, {"name": "notify", "type": "command", "command": "n.sh"}]}]}}`
	removed, n, err := Gemini.Remove([]byte(mixed))
	if err != nil || n != 1 || strings.Contains(string(removed), "hook gemini") || !strings.Contains(string(removed), `"notify"`) {
		t.Errorf("remove from a shared definition: %d, %v\n%s", n, err, removed)
	}
}

func TestAddGeminiHooksRefusesWhatItCannotRead(t *testing.T) {
	for _, s := range []string{`{"hooks": 3}`, "// comment\n{}", `[]`, `{"hooks": {"BeforeAgent": {}}}`} {
		if _, err := Gemini.Add([]byte(s), geminiCommands()); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}
