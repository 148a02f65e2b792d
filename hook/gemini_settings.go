package hook

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Gemini CLI reads a project's hooks from .gemini/settings.json:
//
//	{"hooks": {"EVENT": [{"matcher": "…", "hooks": [{"name": "…", "type": "command", "command": "…"}]}]}}
//
// cowfs adds one definition per event holding one command hook named
// "cowfs", and knows its own hooks by their command (geminiOurs): the
// person's settings and hooks are kept as they are, in their order. The
// CLI warns, when it starts, that the project has hooks, naming them.

// GeminiSettingsPath is the settings file of the project at ws.
func GeminiSettingsPath(ws string) string {
	return filepath.Join(ws, ".gemini", "settings.json")
}

// GeminiHookCommand is the command line of cowfs's hook for event: the
// cowfs binary by absolute path and the workspace by -w, so the hook
// finds the daemon whatever the CLI's working directory and PATH. extra
// are more arguments for `cowfs hook gemini`.
func GeminiHookCommand(cowfs, ws, event string, extra ...string) string {
	parts := []string{shellQuote(cowfs), "-w", shellQuote(ws), "hook", "gemini", event}
	for _, a := range extra {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// geminiHookTimeout is the milliseconds Gemini CLI waits for our hook
// (its default is a minute), under the hook's own bound on requests.
const geminiHookTimeout = 30000

// geminiHook is a hook entry that runs a command.
type geminiHook struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Command     string `json:"command"`
	Timeout     int    `json:"timeout,omitempty"`
	Description string `json:"description,omitempty"`
}

// geminiOurs reports whether a hook command is one `cowfs integrate
// gemini` wrote.
func geminiOurs(command string) bool {
	return strings.Contains(command, " hook gemini ")
}

// AddGeminiHooks returns settings with cowfs's hooks: commands maps
// each event to its command; BeforeTool's runs for every tool. Hooks of
// cowfs already there are replaced, never doubled. settings may be
// empty (no file yet).
func AddGeminiHooks(settings []byte, commands map[string]string) ([]byte, error) {
	s, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, err
	}
	if _, err := removeGeminiOurs(&hooks); err != nil {
		return nil, err
	}
	for _, ev := range GeminiEvents {
		cmd, ok := commands[ev]
		if !ok {
			continue
		}
		var groups []json.RawMessage
		if raw, ok := hooks.get(ev); ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, fmt.Errorf("hooks.%s is not a list: %w", ev, err)
			}
		}
		matcher := ""
		if ev == GeminiPreTool {
			matcher = ".*"
		}
		g, err := json.Marshal(map[string]any{"matcher": matcher, "hooks": []geminiHook{{
			Name: "cowfs", Type: "command", Command: cmd, Timeout: geminiHookTimeout,
			Description: "cowfs: each prompt a turn, each tool call a step (cowfs integrate gemini)",
		}}})
		if err != nil {
			return nil, err
		}
		if err := hooks.setValue(ev, append(groups, g)); err != nil {
			return nil, err
		}
	}
	if err := s.setValue("hooks", hooks); err != nil {
		return nil, err
	}
	return format(s)
}

// RemoveGeminiHooks returns settings without cowfs's hooks, and how
// many it took out. The "hooks" key goes too if nothing else is in it.
func RemoveGeminiHooks(settings []byte) ([]byte, int, error) {
	s, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, 0, err
	}
	n, err := removeGeminiOurs(&hooks)
	if err != nil || n == 0 {
		return settings, n, err
	}
	if len(hooks) == 0 {
		s.del("hooks")
	} else if err := s.setValue("hooks", hooks); err != nil {
		return nil, 0, err
	}
	out, err := format(s)
	return out, n, err
}

// GeminiHooksIn lists the events whose hooks include cowfs's.
func GeminiHooksIn(settings []byte) ([]string, error) {
	_, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, err
	}
	var evs []string
	for _, m := range hooks {
		var groups []struct {
			Hooks []geminiHook `json:"hooks"`
		}
		json.Unmarshal(m.Value, &groups)
	group:
		for _, g := range groups {
			for _, h := range g.Hooks {
				if geminiOurs(h.Command) {
					evs = append(evs, m.Key)
					break group
				}
			}
		}
	}
	return evs, nil
}

// removeGeminiOurs takes cowfs's hooks out of hooks, and the
// definitions and events left empty by it.
func removeGeminiOurs(hooks *object) (int, error) { return removeHooks(hooks, geminiOurs) }
