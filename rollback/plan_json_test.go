package rollback

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// A plan stored a step at a time reads back as the plan json.Marshal
// would have stored.
func TestPlanStored(t *testing.T) {
	pl := &Plan{Target: 3, From: 10, To: 99, Force: true, Skipped: []uint64{12, 15},
		Steps: []Step{{Seq: 20, Op: opData, Path: "a\u2028b", Ino: 7},
			{Seq: 19, Op: opRemove, Path: "d", Type: 0o040000, Covers: []Step{{Seq: 18, Op: opRemove, Path: "d/x"}}}},
		Report: []PathAction{{Path: "a\u2028b", Action: Restore}, {Path: "d", Action: Delete, Type: 0o040000}}}
	for _, p := range []*Plan{pl, {}} {
		var buf bytes.Buffer
		if err := p.stored()(&buf); err != nil {
			t.Fatal(err)
		}
		var got, want Plan
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("stored plan is not JSON: %v: %s", err, buf.Bytes())
		}
		b, _ := json.Marshal(p)
		json.Unmarshal(b, &want)
		if want.Steps == nil {
			want.Steps = []Step{}
		}
		if want.Report == nil {
			want.Report = []PathAction{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("stored plan reads back as %+v, want %+v", got, want)
		}
	}
}
