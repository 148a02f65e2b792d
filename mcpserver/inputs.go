package mcpserver

import "github.com/cowfs/cowfs/ctl"

// The tools' arguments, with the descriptions the model reads in their
// schemas. A turn is its number or the harness's id for it (ctl.TurnRef).

type noInput struct{}

type showInput struct {
	Turn ctl.TurnRef `json:"turn" jsonschema:"the turn: its number (1, 2, 3 …) or the harness's id for it"`
	Step string      `json:"step,omitempty" jsonschema:"only what this step (tool call id) of the turn changed"`
}

type diffInput struct {
	Turn ctl.TurnRef `json:"turn" jsonschema:"the turn whose start the diff starts at: its number or the harness's id"`
	Step string      `json:"step,omitempty" jsonschema:"only what this step (tool call id) of the turn changed"`
	To   ctl.TurnRef `json:"to,omitempty" jsonschema:"where the diff ends: absent for the end of the turn (what it changed), a later turn (its start), or \"now\""`
	// Paths filters the files shown.
	Paths []string `json:"paths,omitempty" jsonschema:"only these files, and the files under these directories (relative to the workspace)"`
	Stat  bool     `json:"stat,omitempty" jsonschema:"counts of added and removed lines only, no diff text"`
}

type catInput struct {
	Turn ctl.TurnRef `json:"turn" jsonschema:"the turn: the file is shown as it was when this turn began"`
	Path string      `json:"path" jsonschema:"the file, relative to the workspace"`
}

type previewInput struct {
	Turn  ctl.TurnRef `json:"turn,omitempty" jsonschema:"the turn to roll back to before; absent: the latest turn not rolled back, as undo does"`
	Force bool        `json:"force,omitempty" jsonschema:"also restore paths changed outside turns, or by processes other than the agent, which are otherwise skipped"`
}

type rollbackInput struct {
	Turn    ctl.TurnRef `json:"turn" jsonschema:"the turn to roll back to before: the workspace returns to its state when this turn began"`
	Force   bool        `json:"force,omitempty" jsonschema:"as in the preview; must match the preview the token is from"`
	Token   string      `json:"token,omitempty" jsonschema:"the token rollback_preview returned for this turn: the rollback is refused if its plan changed since"`
	Confirm bool        `json:"confirm,omitempty" jsonschema:"roll back without a preview's token; only when the user asked for this rollback"`
}

type undoInput struct {
	Force   bool   `json:"force,omitempty" jsonschema:"as in the preview; must match the preview the token is from"`
	Token   string `json:"token,omitempty" jsonschema:"the token rollback_preview (without a turn) returned: the undo is refused if its plan changed since"`
	Confirm bool   `json:"confirm,omitempty" jsonschema:"undo without a preview's token; only when the user asked for it"`
}

type unrevertInput struct {
	Force   bool   `json:"force,omitempty" jsonschema:"also undo the rollback on paths changed since it, which are otherwise skipped"`
	Token   string `json:"token,omitempty" jsonschema:"the token unrevert_preview returned: refused if another rollback or unrevert happened since"`
	Confirm bool   `json:"confirm,omitempty" jsonschema:"unrevert without a preview's token; only when the user asked for it"`
}
