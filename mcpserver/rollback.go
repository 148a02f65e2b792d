package mcpserver

import (
	"context"
	"strconv"

	"github.com/cowfs/cowfs/ctl"
)

// PreviewResult is rollback_preview's result: the plan, and the token
// that lets rollback (or undo) carry it out while it still holds.
type PreviewResult struct {
	ctl.RollbackResult
	// Token is what rollback (to the same turn, with the same force) or
	// undo takes to act on this plan.
	Token string `json:"token"`
}

// noOpenTurn refuses while a turn is open: the daemon refuses rollbacks
// then too, and the model is told which turn and how to end it.
func (s *Server) noOpenTurn(ctx context.Context, c *ctl.Client, what string) error {
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if t := st.OpenTurn; t != nil {
		return refusef("refused: turn %d%s is open, and %s is refused while a turn is open (it would undo the work in progress). "+
			"End it first: cowfs turn end -w %s (a harness: POST /v1/turns/current/end), then try again",
			t.Num, idAnchor(t.ID, t.Anchor), what, s.workspaceArg())
	}
	return nil
}

// latest is the latest turn not rolled back: what undo rolls back.
func latest(ctx context.Context, c *ctl.Client) (ctl.TurnRef, error) {
	l, err := c.Turns(ctx)
	if err != nil {
		return "", err
	}
	var n uint64
	for _, t := range l.Turns {
		if t.State != ctl.StateReverted {
			n = t.Num
		}
	}
	if n == 0 {
		return "", refusef("nothing to undo: every turn in the window is rolled back already, or there is none")
	}
	return ctl.TurnRef(strconv.FormatUint(n, 10)), nil
}

func (s *Server) preview(ctx context.Context, c *ctl.Client, in previewInput) (PreviewResult, string, error) {
	if err := s.noOpenTurn(ctx, c, "a rollback"); err != nil {
		return PreviewResult{}, "", err
	}
	to := in.Turn
	if to == "" {
		var err error
		if to, err = latest(ctx, c); err != nil {
			return PreviewResult{}, "", err
		}
	}
	plan, err := c.Rollback(ctx, ctl.RollbackRequest{To: to, DryRun: true, Force: in.Force})
	if err != nil {
		return PreviewResult{}, "", err
	}
	res := PreviewResult{RollbackResult: plan, Token: s.rollbackToken(plan, in.Force)}
	return res, previewText(res, in.Force), nil
}

func (s *Server) rollback(ctx context.Context, c *ctl.Client, in rollbackInput) (ctl.RollbackResult, string, error) {
	return s.rollbackTo(ctx, c, in.Turn, in.Force, in.Token, in.Confirm, "rollback_preview with turn "+strconv.Quote(string(in.Turn)))
}

func (s *Server) undo(ctx context.Context, c *ctl.Client, in undoInput) (ctl.RollbackResult, string, error) {
	// With a turn open, latest is that turn, and rollbackTo refuses.
	to, err := latest(ctx, c)
	if err != nil {
		return ctl.RollbackResult{}, "", err
	}
	return s.rollbackTo(ctx, c, to, in.Force, in.Token, in.Confirm, "rollback_preview without a turn")
}

// rollbackTo rolls back to before turn to once the guards pass: no
// open turn, and a token whose plan still holds or the caller's
// explicit confirm.
func (s *Server) rollbackTo(ctx context.Context, c *ctl.Client, to ctl.TurnRef, force bool, token string, confirm bool, preview string) (ctl.RollbackResult, string, error) {
	if err := s.noOpenTurn(ctx, c, "a rollback"); err != nil {
		return ctl.RollbackResult{}, "", err
	}
	what := "a rollback to before turn " + string(to)
	if token == "" && !confirm {
		return ctl.RollbackResult{}, "", refusef("refused: %s needs the token of its preview, so it does not act blind: call %s, read the plan (what it restores, deletes and skips), then pass its token. "+
			"Or pass confirm: true if the user asked for this rollback as it is", what, preview)
	}
	if token != "" {
		plan, err := c.Rollback(ctx, ctl.RollbackRequest{To: to, DryRun: true, Force: force})
		if err != nil {
			return ctl.RollbackResult{}, "", err
		}
		if err := checkToken(token, s.rollbackToken(plan, force), what, preview); err != nil {
			return ctl.RollbackResult{}, "", err
		}
	}
	res, err := c.Rollback(ctx, ctl.RollbackRequest{To: to, Force: force})
	if err != nil {
		return ctl.RollbackResult{}, "", err
	}
	return res, rollbackText(res), nil
}

// UnrevertPreview is unrevert_preview's result. The daemon has no dry
// run of an unrevert; this says what it would undo.
type UnrevertPreview struct {
	// Unrevertable counts the rollbacks since the last turn began;
	// unrevert undoes the latest.
	Unrevertable int `json:"unrevertable"`
	// Reverted are the turns rolled back now (an unrevert brings back
	// those the last rollback reverted).
	Reverted []ctl.Turn `json:"reverted"`
	// Markers are the markers standing; an unrevert withdraws the last
	// rollback's and puts back those it replaced.
	Markers []ctl.Marker `json:"markers"`
	// Token is what unrevert takes to act while this still holds.
	Token string `json:"token"`
}

// unrevertState reads what an unrevert would undo, and refuses if there
// is nothing.
func (s *Server) unrevertState(ctx context.Context, c *ctl.Client) (UnrevertPreview, error) {
	if err := s.noOpenTurn(ctx, c, "an unrevert"); err != nil {
		return UnrevertPreview{}, err
	}
	st, err := c.Status(ctx)
	if err != nil {
		return UnrevertPreview{}, err
	}
	if st.Unrevertable == 0 {
		return UnrevertPreview{}, refusef("nothing to unrevert: no rollback since the last turn began (beginning a turn drops the rolled-back turns for good)")
	}
	l, err := c.Turns(ctx)
	if err != nil {
		return UnrevertPreview{}, err
	}
	m, err := c.Markers(ctx)
	if err != nil {
		return UnrevertPreview{}, err
	}
	p := UnrevertPreview{Unrevertable: st.Unrevertable, Reverted: []ctl.Turn{}, Markers: m.Markers}
	if p.Markers == nil {
		p.Markers = []ctl.Marker{}
	}
	us := unrevertState{Unrevertable: st.Unrevertable, Markers: p.Markers}
	for _, t := range l.Turns {
		us.Turns = append(us.Turns, turnState{t.Num, t.State})
		if t.State == ctl.StateReverted {
			p.Reverted = append(p.Reverted, t)
		}
	}
	p.Token = s.unrevertToken(us)
	return p, nil
}

func (s *Server) unrevertPreview(ctx context.Context, c *ctl.Client, _ noInput) (UnrevertPreview, string, error) {
	p, err := s.unrevertState(ctx, c)
	if err != nil {
		return UnrevertPreview{}, "", err
	}
	return p, unrevertPreviewText(p), nil
}

func (s *Server) unrevert(ctx context.Context, c *ctl.Client, in unrevertInput) (ctl.RollbackResult, string, error) {
	const what, preview = "an unrevert of the last rollback", "unrevert_preview"
	if in.Token == "" && !in.Confirm {
		if err := s.noOpenTurn(ctx, c, "an unrevert"); err != nil {
			return ctl.RollbackResult{}, "", err
		}
		return ctl.RollbackResult{}, "", refusef("refused: %s needs the token of its preview, so it does not act blind: call %s, read what it would undo, then pass its token. "+
			"Or pass confirm: true if the user asked for it", what, preview)
	}
	p, err := s.unrevertState(ctx, c)
	if err != nil {
		return ctl.RollbackResult{}, "", err
	}
	if in.Token != "" {
		if err := checkToken(in.Token, p.Token, what, preview); err != nil {
			return ctl.RollbackResult{}, "", err
		}
	}
	res, err := c.Unrevert(ctx, ctl.UnrevertRequest{Force: in.Force})
	if err != nil {
		return ctl.RollbackResult{}, "", err
	}
	return res, rollbackText(res), nil
}
