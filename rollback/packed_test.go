package rollback

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

func TestPackedStepsComeBackAsTheyWent(t *testing.T) {
	for _, n := range []int{0, 1, packSteps - 1, packSteps, packSteps + 1, 3*packSteps + 7} {
		steps := make([]Step, n)
		for i := range steps {
			steps[i] = Step{Seq: uint64(1000 - i), Op: opRename, Path: fmt.Sprintf("d/f%d", i), Path2: "d/é\n\"x\"caf\xe9", Skip: reasonOutside,
				Ino: uint64(i), Type: 0o100000}
			if i%5 == 0 {
				steps[i].Op, steps[i].Covers = opRemove, []Step{{Seq: 1, Op: opRemove, Path: "d/f"}}
			}
		}
		p := pack(steps)
		for _, from := range []int{0, 1, packSteps - 1, packSteps, n - 1, n} {
			if from < 0 || from > n {
				continue
			}
			var got []Step
			err := p.each(from, func(i int, s *Step) error {
				if i != from+len(got) {
					t.Fatalf("n %d from %d: step %d came as %d", n, from, from+len(got), i)
				}
				got = append(got, *s)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := steps[from:]; !reflect.DeepEqual(got, want) && len(want) > 0 {
				t.Errorf("n %d from %d: steps differ", n, from)
			}
		}
	}
}

// Skips learnt at run time reach the steps of a packed plan, as they
// are yielded and as the plan is stored again.
func TestPackedPlanAppliesSkipsLearnt(t *testing.T) {
	pl := &Plan{Steps: []Step{{Seq: 3, Op: opData, Path: "a"}, {Seq: 2, Op: opData, Path: "b"}}}
	pl.pack()
	pl.skips = map[uint64]string{2: reasonMismatch}
	var skips []string
	pl.eachStep(0, func(_ int, s *Step) error { skips = append(skips, s.Skip); return nil })
	if !reflect.DeepEqual(skips, []string{"", reasonMismatch}) || pl.numSteps() != 2 {
		t.Errorf("skips %q of %d steps", skips, pl.numSteps())
	}
	var buf bytes.Buffer
	if err := pl.stored()(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := decodePlan(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	skips = nil
	back.eachStep(0, func(_ int, s *Step) error { skips = append(skips, s.Skip); return nil })
	if !reflect.DeepEqual(skips, []string{"", reasonMismatch}) {
		t.Errorf("stored again, skips %q", skips)
	}
}
