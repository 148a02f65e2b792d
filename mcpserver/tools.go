package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cowfs/cowfs/ctl"
)

// handler is what a tool does with a client: its typed result, and the
// same as text for the model.
type handler[In, Out any] func(ctx context.Context, c *ctl.Client, in In) (Out, string, error)

// kind says what a tool may do to the workspace, for its annotations.
type kind int

const (
	readOnly kind = iota
	destructive
)

func (s *Server) addTools() error {
	errs := []error{
		add(s, "log", "List the turns", readOnly, logDesc, s.log),
		add(s, "show", "Show what a turn changed", readOnly, showDesc, s.show),
		add(s, "diff", "Diff a turn or a step", readOnly, diffDesc, s.diff),
		add(s, "cat", "A file as it was when a turn began", readOnly, catDesc, s.cat),
		add(s, "markers", "List the conversation truncation markers", readOnly, markersDesc, s.markers),
		add(s, "rollback_preview", "Preview a rollback (or an undo)", readOnly, previewDesc, s.preview),
		add(s, "rollback", "Roll the workspace back to before a turn", destructive, rollbackDesc, s.rollback),
		add(s, "undo", "Roll back the latest turn", destructive, undoDesc, s.undo),
		add(s, "unrevert_preview", "Preview an unrevert (redo)", readOnly, unrevertPreviewDesc, s.unrevertPreview),
		add(s, "unrevert", "Redo: undo the last rollback", destructive, unrevertDesc, s.unrevert),
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// add registers a tool. Its input schema is inferred from In, with a
// turn (ctl.TurnRef) accepted as a number or a string; every tool acts
// on this workspace only, so none is open-world.
func add[In, Out any](s *Server, name, title string, k kind, desc string, h handler[In, Out]) error {
	in, err := jsonschema.For[In](schemaOptions)
	if err != nil {
		return fmt.Errorf("tool %s: input schema: %w", name, err)
	}
	out, err := jsonschema.For[Out](schemaOptions)
	if err != nil {
		return fmt.Errorf("tool %s: output schema: %w", name, err)
	}
	closed := false
	ann := &mcp.ToolAnnotations{Title: title, OpenWorldHint: &closed}
	switch k {
	case readOnly:
		ann.ReadOnlyHint = true
	case destructive:
		yes := true
		ann.DestructiveHint = &yes
	}
	tool := &mcp.Tool{Name: name, Title: title, Description: desc, Annotations: ann, InputSchema: in, OutputSchema: out}
	mcp.AddTool(s.mcp, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		c, release, err := s.opts.Dial(ctx)
		if err != nil {
			return nil, zero, s.toolError(err)
		}
		defer release()
		out, text, err := h(ctx, c, in)
		if err != nil {
			return nil, zero, s.toolError(err)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
	return nil
}

// Descriptions: what the model reads to choose a tool.
const (
	logDesc = "List the turns in the rollback window (oldest first): number, the harness's id and anchor, state (open, closed, reverted), when, how many paths each changed; and the open turn, if any."

	showDesc = "Show what a turn changed: each path with its kind of change (created, modified, deleted, renamed, metadata), size journaled and the process that made it, grouped by the step (tool call) that first changed it."

	diffDesc = "Unified diff of what a turn changed (or one of its steps, or from a turn's start to now or to a later turn), optionally only some paths. Binary and large files are named, not shown; a long diff is cut: narrow it with paths."

	catDesc = "Return a file's content as it was when a turn began (e.g. to see what a rollback would restore)."

	markersDesc = "List the conversation truncation markers rollbacks left: the turn rolled back to before, its id and anchor (where the conversation is cut), and a note for the model."

	previewDesc = "Show what a rollback to before a turn would do, changing nothing: every path with its action (restore, recover, delete, skip) and reason. Returns the token rollback (or undo, without a turn) needs. Refused while a turn is open."

	rollbackDesc = "Put the workspace back as it was when a turn began: undoes that turn and every later one. Needs the token from rollback_preview for the same turn (refused if the plan changed since), or confirm: true. Refused while a turn is open. Leaves a marker; unrevert undoes it until the next turn begins."

	undoDesc = "Roll back the latest turn that is not rolled back already. Needs the token from rollback_preview without a turn (refused if the plan changed since), or confirm: true. Refused while a turn is open."

	unrevertPreviewDesc = "Show what unrevert (redo) would undo: the last rollback since the last turn began, the turns it reverted. Returns the token unrevert needs."

	unrevertDesc = "Redo: put the workspace back as it was just before the last rollback, and withdraw its marker. Possible until the next turn begins. Needs the token from unrevert_preview, or confirm: true. Refused while a turn is open."
)
