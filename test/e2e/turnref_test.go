package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// Over the control socket, a turn id that reads as a number is refused
// (bad_request), and a reference that does is a turn number or
// bad_request: "99999999999999999999" no longer reaches a turn by id.
func TestNumberLikeTurnRefs(t *testing.T) {
	w := newWorkspace(t)
	w.mount()
	c := ctl.NewClient(w.status().Socket)
	ctx := context.Background()
	code := func(err error) string {
		var ce *ctl.Error
		if errors.As(err, &ce) {
			return ce.Code
		}
		return ""
	}
	for _, id := range []string{"99999999999999999999", "-1", "0x10", "1e3", "+5", "07", "1.5"} {
		if _, err := c.BeginTurn(ctx, ctl.BeginTurnRequest{ID: id}); code(err) != ctl.CodeBadRequest || !strings.Contains(err.Error(), "reads as a number") {
			t.Errorf("begin a turn with id %q: %v, want bad_request", id, err)
		}
	}
	if _, err := c.BeginTurn(ctx, ctl.BeginTurnRequest{ID: "call-1"}); err != nil {
		t.Fatal(err)
	}
	w.sh("echo x > f")
	if _, err := c.EndTurn(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"1", "01", "call-1"} {
		if d, err := c.Turn(ctx, ref, ""); err != nil || d.Num != 1 {
			t.Errorf("show %q: %+v %v, want turn 1", ref, d.Turn, err)
		}
	}
	for _, ref := range []string{"99999999999999999999", "-1", "0x1", "1e0"} {
		if _, err := c.Turn(ctx, ref, ""); code(err) != ctl.CodeBadRequest || !strings.Contains(err.Error(), "not a turn number") {
			t.Errorf("show %q: %v, want bad_request", ref, err)
		}
		if _, err := c.Rollback(ctx, ctl.RollbackRequest{To: ctl.TurnRef(ref), DryRun: true}); code(err) != ctl.CodeBadRequest {
			t.Errorf("rollback %q: %v, want bad_request", ref, err)
		}
	}
}
