package journal

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// counters are numbers that must never go back, even when the keys
// that used them are deleted.
type counters struct {
	NextTurn     uint64 `json:"next_turn"`
	NextRollback uint64 `json:"next_rollback"`
}

var countersKey = []byte{prefixCounters}

func rollbackKey(id uint64) []byte { return numKey(prefixRollback, id) }
func planKey(id uint64) []byte     { return numKey(prefixPlan, id) }

func getJSON(txn *badger.Txn, key []byte, v any) (bool, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = item.Value(func(b []byte) error { return json.Unmarshal(b, v) })
	if err != nil {
		return false, fmt.Errorf("%w: %x: %v", ErrCorrupt, key, err)
	}
	return true, nil
}

func setJSON(txn *badger.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}
