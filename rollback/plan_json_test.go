package rollback

import (
	"bytes"
	"reflect"
	"testing"
)

// A plan stored a step at a time reads back as it was: steps (whatever
// bytes their names hold: JSON alone would not keep "caf\xe9"), head
// and report; and packed for its run, it stores the same.
func TestPlanStored(t *testing.T) {
	pl := &Plan{Target: 3, From: 10, To: 99, Force: true, Skipped: []uint64{12, 15},
		Steps: []Step{{Seq: 20, Op: opData, Path: "a\u2028b", Ino: 7},
			{Seq: 19, Op: opRemove, Path: "d", Type: 0o040000, Covers: []Step{{Seq: 18, Op: opRemove, Path: "d/caf\xe9"}}}},
		Report: []PathAction{{Path: "a\u2028b", Action: Restore}, {Path: "d", Action: Delete, Type: 0o040000}}}
	for _, p := range []*Plan{pl, {}} {
		var buf bytes.Buffer
		if err := p.stored()(&buf); err != nil {
			t.Fatal(err)
		}
		got, err := decodePlan(buf.Bytes())
		if err != nil {
			t.Fatalf("stored plan does not read back: %v: %s", err, buf.Bytes())
		}
		var steps []Step
		got.eachStep(0, func(_ int, s *Step) error { steps = append(steps, *s); return nil })
		if !reflect.DeepEqual(steps, p.Steps) || got.numSteps() != len(p.Steps) {
			t.Errorf("stored steps read back as %+v, want %+v", steps, p.Steps)
		}
		if got.Target != p.Target || got.From != p.From || got.To != p.To || got.Force != p.Force ||
			len(got.Skipped) != len(p.Skipped) || len(got.Report) != len(p.Report) ||
			(len(p.Report) > 0 && !reflect.DeepEqual(got.Report, p.Report)) {
			t.Errorf("stored plan reads back as %+v, want %+v", got, p)
		}
		p.pack()
		var again bytes.Buffer
		if err := p.stored()(&again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), buf.Bytes()) {
			t.Errorf("packed, the plan stores as\n%s\nnot\n%s", again.Bytes(), buf.Bytes())
		}
	}
}

// A plan stored before steps were packed (a list under "steps") still
// reads.
func TestPlanStoredUnpackedStillReads(t *testing.T) {
	got, err := decodePlan([]byte(`{"target":2,"from":1,"to":5,"steps":[{"seq":4,"op":"data","path":"a"}],"report":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	got.pack()
	var paths []string
	got.eachStep(0, func(_ int, s *Step) error { paths = append(paths, s.Path); return nil })
	if !reflect.DeepEqual(paths, []string{"a"}) {
		t.Errorf("steps %q", paths)
	}
}
