package daemon

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/cowfs/cowfs/backing"
	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/rollback"
)

// TestAPIError: journal, rollback and path errors get the control
// socket's codes (the CLI's exit codes follow them), also when wrapped;
// anything else stays an internal error.
func TestAPIError(t *testing.T) {
	cases := []struct {
		err  error
		code string // "" : not a *ctl.Error
	}{
		{journal.ErrBusy, ctl.CodeBusy},
		{journal.ErrPartial, ctl.CodeBusy},
		{journal.ErrNoTurn, ctl.CodeConflict},
		{journal.ErrDuplicateID, ctl.CodeConflict},
		{rollback.ErrNothingToUnrevert, ctl.CodeConflict},
		{rollback.ErrNoPreimage, ctl.CodeConflict},
		{journal.ErrTurnNotFound, ctl.CodeNotFound},
		{journal.ErrInvalid, ctl.CodeBadRequest},
		{backing.ErrEscapes, ctl.CodeBadRequest},
		{backing.ErrBadPath, ctl.CodeBadRequest},
		{syscall.ELOOP, ctl.CodeBadRequest},
		{syscall.EXDEV, ctl.CodeBadRequest},
		{syscall.ENAMETOOLONG, ctl.CodeBadRequest},
		{syscall.EISDIR, ctl.CodeBadRequest},
		{syscall.ENOENT, ctl.CodeNotFound},
		{syscall.ENOTDIR, ctl.CodeNotFound},
		{ctl.Errorf(ctl.CodeOutOfWindow, "gone"), ctl.CodeOutOfWindow},
		// Damage is not "not found", whatever else it wraps.
		{journal.ErrDamaged, ctl.CodeInternal},
		{journal.ErrCorrupt, ctl.CodeInternal},
		{fmt.Errorf("%w: pack missing: %w", journal.ErrDamaged, syscall.ENOENT), ctl.CodeInternal},
		{journal.ErrNoSpace, ""},
		{syscall.EIO, ""},
		{errors.New("something else"), ""},
	}
	for _, c := range cases {
		for _, err := range []error{c.err, fmt.Errorf("while doing x: %w", c.err)} {
			got := apiError(err)
			var ce *ctl.Error
			switch {
			case c.code == "" && errors.As(got, &ce):
				t.Errorf("apiError(%v) = %v, want an internal error", err, got)
			case c.code == "":
				if !errors.Is(got, c.err) {
					t.Errorf("apiError(%v) = %v, which does not wrap it", err, got)
				}
			case !errors.As(got, &ce) || ce.Code != c.code:
				t.Errorf("apiError(%v) = %#v, want code %s", err, got, c.code)
			case ce.Code != ctl.CodeOutOfWindow && ce.Message == "":
				t.Errorf("apiError(%v): no message", err)
			}
		}
	}
}
