package rollback

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cowfs/cowfs/journal"
)

// settle makes the stack of rollbacks final, as a turn beginning does
// in the daemon, and frees what it forgot.
func (w *ws) settle() {
	w.t.Helper()
	names, err := w.j.Settle()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, n := range names {
		if err := w.area.Drop(n); err != nil {
			w.t.Fatal(err)
		}
	}
}

// standingMarkers returns the markers that stand, as "turn:anchor"
// strings, oldest turn first.
func (w *ws) standingMarkers() []string {
	w.t.Helper()
	ms, err := w.j.Markers()
	if err != nil {
		w.t.Fatal(err)
	}
	out := []string{}
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%d:%s", m.Turn, m.Anchor))
	}
	return out
}

// anchoredTurn is a turn with anchor a that writes f.
func anchoredTurn(w *ws, a string) journal.Turn {
	w.t.Helper()
	t, err := w.j.BeginTurn("", a, time.Now())
	if err != nil {
		w.t.Fatal(err)
	}
	w.write("f", 0, a)
	w.end()
	return t
}

// TestMarkersOnePerPoint (#32, case 4): turns m1–m4, rollback m4, a
// turn m5, rollback m5, then rollback m2: the last rollback replaced the
// conversation from a2 on, so one marker stands, which names the two it
// replaced; an unrevert puts those back as they were, and the next turn
// makes the one marker final.
func TestMarkersOnePerPoint(t *testing.T) {
	w := newWS(t)
	w.put("f", "a0")
	var m [6]journal.Turn
	for i := 1; i <= 4; i++ {
		m[i] = anchoredTurn(w, fmt.Sprintf("a%d", i))
	}
	w.rollback(m[4], false)
	w.settle()
	m[5] = anchoredTurn(w, "a5")
	w.rollback(m[5], false)
	before, err := w.j.Markers()
	if err != nil {
		t.Fatal(err)
	}
	if got := w.standingMarkers(); !reflect.DeepEqual(got, []string{"4:a4", "5:a5"}) {
		t.Fatalf("markers before rollback m2: %v", got)
	}

	out := w.rollback(m[2], false)
	if got := w.standingMarkers(); !reflect.DeepEqual(got, []string{"2:a2"}) {
		t.Errorf("markers after rollback m2: %v, want the one marker of m2", got)
	}
	var replaces []string
	if out.Marker != nil {
		for _, r := range out.Marker.Replaces {
			replaces = append(replaces, fmt.Sprintf("%d:%s", r.Turn, r.Anchor))
		}
	}
	if !reflect.DeepEqual(replaces, []string{"4:a4", "5:a5"}) {
		t.Errorf("the marker of m2 replaces %v, want the markers of m4 and m5", replaces)
	}
	if ms, err := w.j.Markers(); err != nil || len(ms) != 1 || len(ms[0].Replaces) != 2 {
		t.Errorf("markers listed: %+v (%v), want one naming the two it replaced", ms, err)
	}

	w.unrevert(false)
	if after, err := w.j.Markers(); err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("markers after the unrevert:\n%+v (%v)\nwant them as before the rollback:\n%+v", after, err, before)
	}

	w.rollback(m[2], false)
	w.settle()
	anchoredTurn(w, "a6")
	if got := w.standingMarkers(); !reflect.DeepEqual(got, []string{"2:a2"}) {
		t.Errorf("markers after the next turn: %v, want the one of m2", got)
	}
}
