package e2e

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/cowfs/cowfs/ctl"
)

// markerTurns returns the turns of the markers that stand, and, for each,
// the turns of the markers it replaces.
func (w *workspace) markerTurns() (standing []uint64, replaces map[uint64][]uint64) {
	w.t.Helper()
	var ml ctl.MarkerList
	w.cowfsJSON(&ml, "markers")
	standing, replaces = []uint64{}, map[uint64][]uint64{}
	for _, m := range ml.Markers {
		standing = append(standing, m.Turn)
		for _, r := range m.Replaces {
			replaces[m.Turn] = append(replaces[m.Turn], r.Turn)
		}
	}
	return standing, replaces
}

// #32, case 4: turns m1–m4, rollback m4, turn m5, rollback m5, then
// rollback m2. The last rollback replaced the conversation from a2 on:
// one marker stands, and it says which two it replaced; an unrevert puts
// them back as they were.
func TestMarkersOnePerPoint(t *testing.T) {
	w := newWorkspace(t)
	w.seed(map[string]string{"f": "0\n"})
	w.mount()
	turn := func(i int) {
		w.cowfs("turn", "begin", "--id", fmt.Sprintf("m%d", i), "--anchor", fmt.Sprintf("a%d", i))
		w.sh(fmt.Sprintf("echo %d > f", i))
		w.cowfs("turn", "end")
	}
	for i := 1; i <= 4; i++ {
		turn(i)
	}
	w.rollback("m4")
	turn(5)
	w.rollback("m5")
	var before ctl.MarkerList
	w.cowfsJSON(&before, "markers")

	res := w.rollback("m2")
	if res.Marker == nil || len(res.Marker.Replaces) != 2 || res.Marker.Replaces[0].Anchor != "a4" || res.Marker.Replaces[1].Anchor != "a5" {
		t.Errorf("the rollback's marker: %+v, want it to replace the markers at a4 and a5", res.Marker)
	}
	standing, replaces := w.markerTurns()
	if !reflect.DeepEqual(standing, []uint64{2}) || !reflect.DeepEqual(replaces[2], []uint64{4, 5}) {
		t.Errorf("markers after rollback m2: %v, replacing %v; want one, at turn 2, replacing those of 4 and 5", standing, replaces)
	}

	w.cowfs("unrevert")
	var after ctl.MarkerList
	w.cowfsJSON(&after, "markers")
	if !reflect.DeepEqual(after, before) {
		t.Errorf("markers after the unrevert: %+v, want them as before: %+v", after, before)
	}

	w.rollback("m2")
	turn(6)
	if standing, _ := w.markerTurns(); !reflect.DeepEqual(standing, []uint64{2}) {
		t.Errorf("markers after the next turn: %v, want the one of turn 2", standing)
	}
}
