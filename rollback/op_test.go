package rollback

import (
	"encoding/json"
	"testing"
)

// Step operations are stored by name in the plans the journal keeps
// (docs/journal-format.md): packed (packed.go), or as JSON in plans
// stored before packing. Their names are that encoding; a plan stored by
// an earlier cowfs must read back with the same operations.
func TestOpNames(t *testing.T) {
	names := []string{"remove", "recover", "rename", "exchange", "attr", "data", "xattr"}
	ops := []string{string(opRemove), string(opRecover), string(opRename), string(opExchange), string(opAttr), string(opData), string(opXattr)}
	for i := range names {
		if ops[i] != names[i] {
			t.Errorf("operation %d is named %q, stored plans name it %q", i, ops[i], names[i])
		}
	}

	// A plan stored with one step of each operation (Path "p" + its name)
	// before operations had a type of their own.
	const stored = `{"target":1,"from":2,"to":11,"packed":{"parts":["KLUv/QQA/QIAQoUQFKAxBqSFZXfuv95PAACAwnYXyaEUBy3/niJ9B6y+A6n8i5V/iRERoTGgaEA4LodnooXTChGW9GEIzjOE58MgnBYECwBNcQRIcpMWBNBCEhCwMnLnACzZcZltKF3gTXUX"],"n":7},"report":[]}`
	pl, err := decodePlan([]byte(stored))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	pl.eachStep(0, func(_ int, s *Step) error {
		if s.Path != "p"+string(s.Op) {
			t.Errorf("step %d: op %q path %q", s.Seq, s.Op, s.Path)
		}
		got = append(got, string(s.Op))
		return nil
	})
	if len(got) != len(names) {
		t.Fatalf("stored plan reads as %q, want %q", got, names)
	}
	for i := range got {
		if got[i] != names[i] {
			t.Errorf("stored plan reads as %q, want %q", got, names)
			break
		}
	}

	// A step packed, and as JSON.
	s := Step{Seq: 5, Op: opExchange, Path: "a", Path2: "b", Ino: 7, Ino2: 8, Covers: []Step{{Seq: 4, Op: opRemove, Path: "c"}}}
	if b, want := string(appendStep(nil, &s)), "\x05\bexchange\x01a\x01b\x00\x00\a\b\x00\x00\x01\x04\x06remove\x01c\x00\x00\x00\x00\x00\x00\x00\x00"; b != want {
		t.Errorf("step packs as %q, want %q", b, want)
	}
	j, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"seq":5,"op":"exchange","path":"a","path2":"b","ino":7,"ino2":8,"covers":[{"seq":4,"op":"remove","path":"c"}]}`; string(j) != want {
		t.Errorf("step as JSON: %s, want %s", j, want)
	}
	var back Step
	if err := json.Unmarshal(j, &back); err != nil || back.Op != opExchange || back.Covers[0].Op != opRemove {
		t.Errorf("JSON step reads back as %+v (%v)", back, err)
	}
}
