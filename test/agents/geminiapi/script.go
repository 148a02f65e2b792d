package geminiapi

import "strings"

// Call is one function call the model makes.
type Call struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// Script maps a key found in a user prompt to the model's replies to
// it: each reply is the function calls of one model turn; after the
// last, the model answers with text and the agent's turn ends.
type Script map[string][][]Call

// Shell is a run_shell_command call.
func Shell(command string) Call {
	return Call{Name: "run_shell_command", Args: map[string]any{"command": command, "description": command}}
}

// Write is a write_file call.
func Write(path, content string) Call {
	return Call{Name: "write_file", Args: map[string]any{"file_path": path, "content": content}}
}

// Replace is a replace (edit) call that changes old to new once.
func Replace(path, old, new string) Call {
	return Call{Name: "replace", Args: map[string]any{"file_path": path, "old_string": old, "new_string": new,
		"instruction": "Replace " + old + " with " + new + "."}}
}

// part is a part of a Content: text, a function call or its response.
type part struct {
	Text             string         `json:"text,omitempty"`
	Thought          bool           `json:"thought,omitempty"`
	FunctionCall     *functionCall  `json:"functionCall,omitempty"`
	FunctionResponse map[string]any `json:"functionResponse,omitempty"`
}

type functionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// content is one turn of the conversation the CLI sends.
type content struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

// next finds the prompt the conversation answers and the model's reply
// to it: the function calls of the next scripted turn, or nil when the
// script for that prompt is done (or no key matches).
func (s Script) next(contents []content) (key string, turn int, calls []Call) {
	for i := len(contents) - 1; i >= 0; i-- {
		c := contents[i]
		if c.Role != "user" {
			continue
		}
		for k := range s {
			if !c.hasText(k) {
				continue
			}
			for _, later := range contents[i+1:] {
				if later.Role == "model" && later.hasCall() {
					turn++
				}
			}
			if turn < len(s[k]) {
				return k, turn, s[k][turn]
			}
			return k, turn, nil
		}
	}
	return "", 0, nil
}

func (c content) hasText(s string) bool {
	for _, p := range c.Parts {
		if !p.Thought && strings.Contains(p.Text, s) {
			return true
		}
	}
	return false
}

func (c content) hasCall() bool {
	for _, p := range c.Parts {
		if p.FunctionCall != nil {
			return true
		}
	}
	return false
}
