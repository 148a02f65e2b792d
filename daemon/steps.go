package daemon

import (
	"context"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/journal"
)

// Steps lists a turn's steps in the order they began, each with what
// it changed: its records folded apart from the others', as a turn's
// are (summary), so a path two steps changed is listed under each, with
// what that step did to it.
func (s *service) Steps(ctx context.Context, ref string) (ctl.StepList, error) {
	t, err := s.findTurn(ref)
	if err != nil {
		return ctl.StepList{}, err
	}
	end := t.EndSeq
	if t.Open() {
		end = 0
	}
	type step struct {
		ctl.Step
		fold, others folder
	}
	var order []*step
	byID := map[string]*step{}
	get := func(id string) *step {
		st := byID[id]
		if st == nil {
			st = &step{Step: ctl.Step{ID: id}}
			byID[id] = st
			order = append(order, st)
		}
		return st
	}
	err = s.d.j.Scan(t.StartSeq, end, false, func(r *journal.Record) error {
		switch {
		case r.Turn != t.Num:
		case r.Kind == journal.KindEvent:
			if r.Path == journal.EventStep {
				st := get(r.Step)
				if st.BeganAt == nil {
					began := r.Time
					st.BeganAt = &began
				}
				if name := journal.StepOf(r).Name; name != "" {
					st.Name = name
				}
			}
		case r.NotAgent:
			get(r.Step).others.Add(r)
		default:
			get(r.Step).fold.Add(r)
		}
		return nil
	})
	if err != nil {
		return ctl.StepList{}, err
	}
	l := ctl.StepList{Turn: t.Num, Steps: make([]ctl.Step, 0, len(order))}
	for _, st := range order {
		st.Changes, st.ChangedPaths, st.NotAgentPaths = changesOf(&st.fold, &st.others)
		if st.ID == "" && len(st.Changes) == 0 {
			continue // nothing before the first step, or only cowfs's own
		}
		l.Steps = append(l.Steps, st.Step)
	}
	return l, nil
}

// Outside lists the changes made in the window while no turn was open:
// through the mount, or found outside it at a boundary. Those a
// rollback made are its own (Group), not listed.
func (s *service) Outside(ctx context.Context) (ctl.OutsideChanges, error) {
	var idle, none folder
	err := s.d.j.Scan(0, 0, false, func(r *journal.Record) error {
		if r.Turn == 0 && r.Group == 0 && r.Kind != journal.KindEvent {
			idle.Add(r)
		}
		return nil
	})
	if err != nil {
		return ctl.OutsideChanges{}, err
	}
	changes, _, _ := changesOf(&idle, &none)
	return ctl.OutsideChanges{Changes: changes}, nil
}
