package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cowfs/cowfs/human"
)

// Claude Code and Gemini CLI read a project's hooks from a settings file
// of the same shape (.claude/settings.json, .gemini/settings.json):
//
//	{"hooks": {"EVENT": [{"matcher": "…", "hooks": [{"type": "command", "command": "…"}]}]}}
//
// cowfs adds one group per event holding one command hook, and knows
// its own hooks by their command (` hook AGENT `): whatever else the
// file holds, the person's settings and hooks, is kept as it is, in its
// order.

// Settings is one agent CLI's settings file of hooks, and the hooks
// `cowfs integrate AGENT` writes into it.
type Settings struct {
	Agent  string   // the `cowfs hook` subcommand: "claude-code", "gemini"
	Dir    string   // the project's directory of settings: ".claude"
	Events []string // the events cowfs hooks, in the file's order
	// ToolEvent is the event before each tool call, whose group matches
	// every tool with ToolMatcher; other groups have no matcher, or an
	// empty one where the CLI wants it (EmptyMatcher).
	ToolEvent, ToolMatcher string
	EmptyMatcher           bool
	// Entry is cowfs's hook entry running command.
	Entry func(command string) any
}

// Claude is Claude Code's .claude/settings.json. Claude Code waits
// Timeout seconds for a hook: a daemon that does not answer should not
// hold the agent for its default ten minutes.
var Claude = Settings{
	Agent: "claude-code", Dir: ".claude", Events: ClaudeEvents,
	ToolEvent: ClaudePreTool, ToolMatcher: "*",
	Entry: func(command string) any {
		return struct {
			Type    string `json:"type"`
			Command string `json:"command"`
			Timeout int    `json:"timeout"`
		}{"command", command, 30}
	},
}

// Gemini is Gemini CLI's .gemini/settings.json; its hooks are named,
// and their timeout is in milliseconds (the CLI warns at start that the
// project has hooks, naming them).
var Gemini = Settings{
	Agent: "gemini", Dir: ".gemini", Events: GeminiEvents,
	ToolEvent: GeminiPreTool, ToolMatcher: ".*", EmptyMatcher: true,
	Entry: func(command string) any {
		return struct {
			Name        string `json:"name"`
			Type        string `json:"type"`
			Command     string `json:"command"`
			Timeout     int    `json:"timeout"`
			Description string `json:"description"`
		}{"cowfs", "command", command, 30000, "cowfs: each prompt a turn, each tool call a step (cowfs integrate gemini)"}
	},
}

// Path is the settings file of the project at ws.
func (s Settings) Path(ws string) string {
	return filepath.Join(ws, s.Dir, "settings.json")
}

// Command is the command line of cowfs's hook for event: the cowfs
// binary by absolute path and the workspace by -w, so the hook finds the
// daemon whatever the CLI's working directory and PATH. extra are more
// arguments for `cowfs hook AGENT`.
func (s Settings) Command(cowfs, ws, event string, extra ...string) string {
	parts := []string{human.ShellWord(cowfs), "-w", human.ShellWord(ws), "hook", s.Agent, event}
	for _, a := range extra {
		parts = append(parts, human.ShellWord(a))
	}
	return strings.Join(parts, " ")
}

// ours reports whether a hook command is one `cowfs integrate AGENT`
// wrote.
func (s Settings) ours(command string) bool {
	return strings.Contains(command, " hook "+s.Agent+" ")
}

// Add returns settings with cowfs's hooks: commands maps each event to
// its command. Hooks of cowfs already there are replaced, never
// doubled. settings may be empty (no file yet).
func (s Settings) Add(settings []byte, commands map[string]string) ([]byte, error) {
	top, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, err
	}
	if _, err := s.removeOurs(&hooks); err != nil {
		return nil, err
	}
	for _, ev := range s.Events {
		cmd, ok := commands[ev]
		if !ok {
			continue
		}
		group := object{}
		switch {
		case ev == s.ToolEvent:
			group.setValue("matcher", s.ToolMatcher)
		case s.EmptyMatcher:
			group.setValue("matcher", "")
		}
		group.setValue("hooks", []any{s.Entry(cmd)})
		var groups []json.RawMessage
		if raw, ok := hooks.get(ev); ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, fmt.Errorf("hooks.%s is not a list: %w", ev, err)
			}
		}
		g, _ := group.MarshalJSON()
		if err := hooks.setValue(ev, append(groups, g)); err != nil {
			return nil, err
		}
	}
	if err := top.setValue("hooks", hooks); err != nil {
		return nil, err
	}
	return format(top)
}

// Remove returns settings without cowfs's hooks, and how many it took
// out. Groups, events and the hooks key left empty go too.
func (s Settings) Remove(settings []byte) ([]byte, int, error) {
	top, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, 0, err
	}
	n, err := s.removeOurs(&hooks)
	if err != nil || n == 0 {
		return settings, 0, err
	}
	if len(hooks) == 0 {
		top.del("hooks")
	} else if err := top.setValue("hooks", hooks); err != nil {
		return nil, 0, err
	}
	out, err := format(top)
	return out, n, err
}

// In returns the events whose hooks in settings include cowfs's, in the
// file's order.
func (s Settings) In(settings []byte) ([]string, error) {
	_, hooks, err := parseSettings(settings)
	if err != nil {
		return nil, err
	}
	var evs []string
	for _, m := range hooks {
		var groups []struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		}
		json.Unmarshal(m.Value, &groups)
	event:
		for _, g := range groups {
			for _, h := range g.Hooks {
				if s.ours(h.Command) {
					evs = append(evs, m.Key)
					break event
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
func (s Settings) removeOurs(hooks *object) (int, error) {
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
				if json.Unmarshal(h, &c) == nil && s.ours(c.Command) {
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
