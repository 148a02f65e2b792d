package journal

import (
	"testing"

	"github.com/cowfs/cowfs/journal/pack"
)

// A chunk found in the index is remembered, and forgotten when a prune
// deletes it: content stored again after its last record left the
// window is stored anew, and restores.
func TestPresentChunksForgottenOnPrune(t *testing.T) {
	j, err := Open(t.TempDir(), Options{Window: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	x, y := randomBytes(1, 8192), randomBytes(2, 8192)
	addTurn(t, j, map[string][]byte{"a": x})
	if err := j.wal.Apply(); err != nil { // so the next lookup asks Badger
		t.Fatal(err)
	}
	addTurn(t, j, map[string][]byte{"b": x}) // found in Badger: remembered
	if !j.present.has(pack.Hash(x)) {
		t.Fatal("a chunk found in the index was not remembered")
	}
	addTurn(t, j, map[string][]byte{"c": y}) // a leaves the window
	addTurn(t, j, map[string][]byte{"d": y}) // b leaves: x is deleted
	addTurn(t, j, map[string][]byte{"e": x})
	n := checkRecords(t, j, func(r *Record) []byte {
		if r.Path == "e" {
			return x
		}
		return y
	})
	if n != 2 {
		t.Fatalf("%d records restored, want 2", n)
	}
}
