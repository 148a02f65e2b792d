package journal

import (
	"encoding/binary"
	"errors"

	"github.com/dgraph-io/badger/v4"
)

// The ids of turns that left the window are remembered (key prefixGone
// + id -> turn number) so that a rollback to one by its id is told the
// turn left the window — as by its number — and not that there never
// was such a turn. Only the ids of the last goneKept turns are kept.
const goneKept = 10000

func goneKey(id string) []byte { return append([]byte{prefixGone}, id...) }

// rememberGone notes the ids of turns leaving the window, and forgets
// those of turns more than goneKept before the oldest that stays.
func (j *Journal) rememberGone(gone []Turn, oldest uint64) error {
	return j.db.Update(func(txn *badger.Txn) error {
		for _, t := range gone {
			if t.ID != "" {
				if err := txn.Set(goneKey(t.ID), binary.BigEndian.AppendUint64(nil, t.Num)); err != nil {
					return err
				}
			}
		}
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte{prefixGone}})
		defer it.Close()
		var stale [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			err := it.Item().Value(func(v []byte) error {
				if len(v) == 8 && binary.BigEndian.Uint64(v)+goneKept < oldest {
					stale = append(stale, it.Item().KeyCopy(nil))
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		for _, k := range stale {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// GoneTurn returns the number of the turn with id that left the window,
// if it is remembered.
func (j *Journal) GoneTurn(id string) (uint64, bool) {
	var n uint64
	err := j.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(goneKey(id))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 8 {
				return errors.New("bad gone turn")
			}
			n = binary.BigEndian.Uint64(v)
			return nil
		})
	})
	return n, err == nil && id != ""
}
