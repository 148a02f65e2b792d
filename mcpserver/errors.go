package mcpserver

import (
	"errors"
	"fmt"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/human"
)

// refusal is a tool's own refusal: its message is the whole answer.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refusef(format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...)}
}

// toolError is what the model reads when a tool fails: the daemon's
// code and message as the daemon gave them, or the server's refusal,
// with what to do where that is known.
func (s *Server) toolError(err error) error {
	var api *ctl.Error
	switch {
	case errors.As(err, new(*refusal)):
		return err
	case errors.Is(err, ctl.ErrNotRunning):
		return fmt.Errorf("%w; mount the workspace first: cowfs mount --background %s (or run the agent under cowfs run)", err, s.workspaceArg())
	case errors.As(err, &api):
		return fmt.Errorf("cowfs daemon: %s", api.Error())
	}
	return fmt.Errorf("cowfs: %w", err)
}

// workspaceArg is the workspace as a command's argument.
func (s *Server) workspaceArg() string {
	if s.opts.Workspace == "" {
		return "WORKSPACE"
	}
	return human.ShellWord(s.opts.Workspace)
}
