package hook

import (
	"context"

	"github.com/cowfs/cowfs/ctl"
)

// fakeDaemon keeps turns, steps and markers as a daemon would, enough
// for the hook logic.
type fakeDaemon struct {
	turns     []ctl.Turn
	open      int // index of the open turn + 1; 0: none
	steps     []string
	stepNames []string // the steps' names, as sent
	markers   []ctl.Marker
	begun     []ctl.BeginTurnRequest
	err       error // every request fails with it, if set
}

func (f *fakeDaemon) Status(context.Context) (ctl.Status, error) {
	if f.err != nil {
		return ctl.Status{}, f.err
	}
	var st ctl.Status
	if f.open > 0 {
		t := f.turns[f.open-1]
		st.OpenTurn = &t
	}
	return st, nil
}

func (f *fakeDaemon) BeginTurn(_ context.Context, req ctl.BeginTurnRequest) (ctl.Turn, error) {
	if f.err != nil {
		return ctl.Turn{}, f.err
	}
	if f.open > 0 {
		return ctl.Turn{}, ctl.Errorf(ctl.CodeBusy, "a turn is open")
	}
	for _, t := range f.turns {
		if req.ID != "" && t.ID == req.ID {
			return ctl.Turn{}, ctl.Errorf(ctl.CodeConflict, "id %s in use", req.ID)
		}
	}
	f.begun = append(f.begun, req)
	t := ctl.Turn{Num: uint64(len(f.turns) + 1), ID: req.ID, Anchor: req.Anchor, State: ctl.StateOpen, Agent: req.Agent}
	f.turns = append(f.turns, t)
	f.open = len(f.turns)
	return t, nil
}

func (f *fakeDaemon) EndTurn(context.Context) (ctl.Turn, error) {
	if f.err != nil {
		return ctl.Turn{}, f.err
	}
	if f.open == 0 {
		return ctl.Turn{}, ctl.Errorf(ctl.CodeConflict, "no open turn")
	}
	t := &f.turns[f.open-1]
	t.State = ctl.StateClosed
	f.open = 0
	return *t, nil
}

func (f *fakeDaemon) BeginStep(_ context.Context, req ctl.StepRequest) (ctl.StepStarted, error) {
	if f.err != nil {
		return ctl.StepStarted{}, f.err
	}
	if f.open == 0 {
		return ctl.StepStarted{}, ctl.Errorf(ctl.CodeConflict, "no open turn")
	}
	f.steps = append(f.steps, req.ID)
	f.stepNames = append(f.stepNames, req.Name)
	return ctl.StepStarted{Turn: uint64(f.open), ID: req.ID}, nil
}

func (f *fakeDaemon) Markers(context.Context) (ctl.MarkerList, error) {
	if f.err != nil {
		return ctl.MarkerList{}, f.err
	}
	return ctl.MarkerList{Markers: append([]ctl.Marker{}, f.markers...)}, nil
}
