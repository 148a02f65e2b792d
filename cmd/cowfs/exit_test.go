package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

// TestExitCode: every error a command can end with maps to the exit code
// the root command's help lists, also when wrapped.
func TestExitCode(t *testing.T) {
	cases := []struct {
		err  error
		code int
	}{
		{nil, exitOK},
		{errors.New("anything"), exitError},
		{usageError{errors.New("takes 1 argument")}, exitUsage},
		{codedError{errors.New("from a background daemon"), exitCannotMount}, exitCannotMount},
		{errPartial, exitPartial},
		{ctl.ErrNotRunning, exitNotRunning},
		{ctl.Errorf(ctl.CodeBadRequest, "x"), exitUsage},
		{ctl.Errorf(ctl.CodeBusy, "x"), exitBusy},
		{ctl.Errorf(ctl.CodeNotFound, "x"), exitNotFound},
		{ctl.Errorf(ctl.CodeOutOfWindow, "x"), exitOutOfWindow},
		{ctl.Errorf(ctl.CodeConflict, "x"), exitConflict},
		{ctl.Errorf(ctl.CodeInternal, "x"), exitError},
		{ctl.Errorf(ctl.CodeForbidden, "x"), exitError},
		{daemon.ErrNoFUSE, exitCannotMount},
		{daemon.ErrNotPermitted, exitCannotMount},
		{daemon.ErrNoWorkspace, exitCannotMount},
		{daemon.ErrAlreadyMounted, exitCannotMount},
		{daemon.ErrPlacement, exitCannotMount},
		{daemon.ErrJournalLocked, exitCannotMount},
		{daemon.ErrEmptyPath, exitUsage},
		{fmt.Errorf("state directory /s: %w", daemon.ErrUnsafeDir), exitCannotMount},
		{&ctl.ForeignServerError{Socket: "/s", Uid: 65534}, exitForeign},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.code {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.code)
		}
		if c.err == nil {
			continue
		}
		if got := exitCode(fmt.Errorf("cowfs: %w", c.err)); got != c.code {
			t.Errorf("exitCode(wrapped %v) = %d, want %d", c.err, got, c.code)
		}
	}
}
