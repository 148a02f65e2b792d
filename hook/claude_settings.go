package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Claude Code reads hooks from the project's .claude/settings.json:
//
//	{"hooks": {"EVENT": [{"matcher": "…", "hooks": [{"type": "command", "command": "…"}]}]}}
//
// cowfs adds one group per event holding one command hook, and knows
// its own hooks by their command (ours): whatever else the file holds,
// the person's settings and hooks, is kept as it is, in its order.

// ClaudeSettingsPath is the settings file of the project at ws.
func ClaudeSettingsPath(ws string) string {
	return filepath.Join(ws, ".claude", "settings.json")
}

// ClaudeHookCommand is the command line of cowfs's hook for event: the
// cowfs binary by absolute path and the workspace by -w, so the hook
// finds the daemon whatever the CLI's working directory and PATH. extra
// are more arguments for `cowfs hook claude-code`.
func ClaudeHookCommand(cowfs, ws, event string, extra ...string) string {
	parts := []string{shellQuote(cowfs), "-w", shellQuote(ws), "hook", "claude-code", event}
	for _, a := range extra {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// hookTimeout is the seconds Claude Code waits for our hook: a daemon
// that does not answer should not hold the agent for its default ten
// minutes.
const hookTimeout = 30

// commandHook is a hook entry that runs a command.
type commandHook struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

// ours reports whether a hook command is one `cowfs integrate
// claude-code` wrote.
func ours(command string) bool {
	return strings.Contains(command, " hook claude-code ")
}

// AddClaudeHooks returns settings with cowfs's hooks: commands maps
// each event to its command. Hooks of cowfs already there are replaced,
// never doubled. settings may be empty (no file yet).
func AddClaudeHooks(settings []byte, commands map[string]string) ([]byte, error) {
	s, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, err
	}
	if _, err := removeOurs(&hooks); err != nil {
		return nil, err
	}
	for _, ev := range ClaudeEvents {
		cmd, ok := commands[ev]
		if !ok {
			continue
		}
		group := object{}
		if ev == ClaudePreTool {
			group.setValue("matcher", "*")
		}
		group.setValue("hooks", []commandHook{{Type: "command", Command: cmd, Timeout: hookTimeout}})
		var groups []json.RawMessage
		if raw, ok := hooks.get(ev); ok {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, fmt.Errorf("hooks.%s is not a list: %w", ev, err)
			}
		}
		g, _ := group.MarshalJSON()
		groups = append(groups, g)
		if err := hooks.setValue(ev, groups); err != nil {
			return nil, err
		}
	}
	if err := s.setValue("hooks", hooks); err != nil {
		return nil, err
	}
	return format(s)
}

// RemoveClaudeHooks returns settings without cowfs's hooks, and how
// many it took out. Groups, events and the hooks key left empty go too.
func RemoveClaudeHooks(settings []byte) ([]byte, int, error) {
	s, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, 0, err
	}
	n, err := removeOurs(&hooks)
	if err != nil || n == 0 {
		return settings, 0, err
	}
	if len(hooks) == 0 {
		s.del("hooks")
	} else if err := s.setValue("hooks", hooks); err != nil {
		return nil, 0, err
	}
	out, err := format(s)
	return out, n, err
}

// ClaudeHooksIn returns the events whose hooks in settings are cowfs's.
func ClaudeHooksIn(settings []byte) ([]string, error) {
	_, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, err
	}
	var evs []string
	for _, m := range hooks {
		var groups []json.RawMessage
		if json.Unmarshal(m.Value, &groups) != nil {
			continue
		}
		for _, g := range groups {
			var h struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			}
			json.Unmarshal(g, &h)
			for _, c := range h.Hooks {
				if ours(c.Command) {
					evs = append(evs, m.Key)
				}
			}
		}
	}
	return evs, nil
}

func parseSettings(settings []byte) (object, object, error) {
	var s, hooks object
	if len(bytes.TrimSpace(settings)) == 0 {
		return object{}, object{}, nil
	}
	if err := json.Unmarshal(settings, &s); err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if raw, ok := s.get("hooks"); ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &hooks); err != nil {
			return nil, nil, fmt.Errorf("hooks: %w", err)
		}
	}
	return s, hooks, nil
}

// removeOurs takes cowfs's hooks out of hooks, and the groups and
// events left empty by it.
func removeOurs(hooks *object) (int, error) { return removeHooks(hooks, ours) }

// removeHooks takes the hooks whose command is ours out of hooks, and
// the groups and events left empty by it.
func removeHooks(hooks *object, ours func(command string) bool) (int, error) {
	n := 0
	for _, m := range append(object(nil), *hooks...) {
		var groups []json.RawMessage
		if err := json.Unmarshal(m.Value, &groups); err != nil {
			continue // not a list: not ours to judge
		}
		var kept []json.RawMessage
		changed := false
		for _, g := range groups {
			var group object
			if json.Unmarshal(g, &group) != nil {
				kept = append(kept, g)
				continue
			}
			raw, _ := group.get("hooks")
			var hs []json.RawMessage
			json.Unmarshal(raw, &hs)
			var left []json.RawMessage
			for _, h := range hs {
				var c struct {
					Command string `json:"command"`
				}
				if json.Unmarshal(h, &c) == nil && ours(c.Command) {
					n++
					continue
				}
				left = append(left, h)
			}
			switch {
			case len(left) == len(hs):
				kept = append(kept, g)
			case len(left) > 0:
				group.setValue("hooks", left)
				b, _ := group.MarshalJSON()
				kept = append(kept, b)
				changed = true
			default:
				changed = true
			}
		}
		switch {
		case !changed:
		case len(kept) == 0:
			hooks.del(m.Key)
		default:
			if err := hooks.setValue(m.Key, kept); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func format(s object) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ReadClaudeSettings reads the settings file at path; nil if there is
// none.
func ReadClaudeSettings(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// WriteClaudeSettings replaces the settings file at path with b,
// through a temporary file renamed over it, so Claude Code never reads
// half a file; its directory is made if missing. An empty object
// removes the file (and the .claude directory, if that leaves it
// empty): cowfs made them.
func WriteClaudeSettings(path string, b []byte) error {
	if string(bytes.TrimSpace(b)) == "{}" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		os.Remove(filepath.Dir(path)) // only if empty
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".settings.json.cowfs*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
