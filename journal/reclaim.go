package journal

import (
	"errors"
	"fmt"
	"sort"

	"github.com/dgraph-io/badger/v4"

	"github.com/cowfs/cowfs/journal/pack"
)

// testHookReclaim is called at each step of a repack; crash tests kill
// the process there.
var testHookReclaim = func(step string) {}

// reclaim gives back the space of content no record needs any more:
// packs no index entry names are deleted, and while more than
// pack.MaxUnused of the sealed packs' bytes are unused, the pack with the
// most unused bytes is repacked — its live entries copied into the pack
// being written, the index moved to the copies, the pack deleted. This
// is restic's prune: plan from the index, copy, switch, delete.
//
// Why a crash at any point loses nothing (kill -9, or a power cut):
//   - sealing takes j.content exclusively, so no change is between
//     writing a chunk and indexing it: every entry a sealed pack will
//     ever have is in the index, and new ones only go to newer packs;
//   - a pack is deleted only after the index names nothing in it and
//     that index is durable (DB.Sync): a crash before the delete leaves
//     an unused pack, deleted next time;
//   - copies are fsynced before the index is switched to them, and the
//     switch is one Badger commit per batch that moves an entry only if
//     it still names the old place: a crash before it leaves unused
//     copies; after it, an old pack with nothing live in it.
//
// Readers (ReadChunk) hold j.content shared from looking a chunk up to
// reading it; the switch happens under j.content exclusively, so no
// reader holds a location in a pack that is about to go.
func (j *Journal) reclaim() error {
	j.reclaimMu.Lock()
	defer j.reclaimMu.Unlock()
	defer j.remeasure()
	j.content.Lock()
	sealed, err := j.packs.Seal()
	j.content.Unlock()
	if err != nil {
		return err
	}
	uses, err := j.packUses(sealed)
	if err != nil {
		return err
	}
	var dead, kept []pack.Use
	for _, u := range uses {
		if u.Live == 0 {
			dead = append(dead, u)
		} else {
			kept = append(kept, u)
		}
	}
	if len(dead) > 0 {
		if err := j.dropPacks(dead); err != nil {
			return err
		}
	}
	plan := pack.PlanRepack(kept)
	if len(plan) == 0 {
		return nil
	}
	return j.repack(plan)
}

// packUses returns the use of every pack numbered below sealed.
func (j *Journal) packUses(sealed uint64) ([]pack.Use, error) {
	sizes, err := j.packs.List()
	if err != nil {
		return nil, err
	}
	live := map[uint64]int64{}
	err = j.eachLoc(func(_ [32]byte, l pack.Loc) error {
		live[l.Pack] += l.Size()
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []pack.Use
	for id, size := range sizes {
		if id < sealed {
			out = append(out, pack.NewUse(id, size, live[id]))
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// eachLoc calls fn with every index entry.
func (j *Journal) eachLoc(fn func(h [32]byte, l pack.Loc) error) error {
	return j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256, Prefix: []byte{prefixChunk}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var h [32]byte
			copy(h[:], it.Item().Key()[1:])
			var l pack.Loc
			err := it.Item().Value(func(v []byte) (err error) {
				l, err = pack.DecodeLoc(v)
				return err
			})
			if err != nil {
				return err
			}
			if err := fn(h, l); err != nil {
				return err
			}
		}
		return nil
	})
}

// dropPacks deletes packs the index names nothing in, once the index
// that says so is durable.
func (j *Journal) dropPacks(dead []pack.Use) error {
	if err := j.db.Sync(); err != nil {
		return fmt.Errorf("journal: sync index: %w", err)
	}
	var freed int64
	for _, u := range dead {
		if err := j.packs.Remove(u.ID); err != nil {
			return err
		}
		freed += u.Size
	}
	j.log.Info("journal: deleted unused packs", "packs", len(dead), "bytes", freed)
	return nil
}

// move is one entry being repacked.
type move struct {
	h        [32]byte
	from, to pack.Loc
}

// repack copies the live entries of the planned packs into the pack
// being written, switches the index to the copies and deletes the
// packs (see reclaim for why each step is safe).
func (j *Journal) repack(plan []pack.Use) error {
	want := map[uint64]bool{}
	for _, u := range plan {
		want[u.ID] = true
	}
	byPack := map[uint64][]move{}
	err := j.eachLoc(func(h [32]byte, l pack.Loc) error {
		if want[l.Pack] {
			byPack[l.Pack] = append(byPack[l.Pack], move{h: h, from: l})
		}
		return nil
	})
	if err != nil {
		return err
	}
	var moves []move
	dest := map[uint64]bool{}
	for _, u := range plan {
		ms := byPack[u.ID]
		sort.Slice(ms, func(a, b int) bool { return ms[a].from.Off < ms[b].from.Off })
		f, err := j.packs.OpenPack(u.ID)
		if err != nil {
			return fmt.Errorf("journal: repack: %w", err)
		}
		for i := range ms {
			e, err := j.packs.ReadEntry(f, ms[i].from, ms[i].h)
			if err == nil {
				ms[i].to, err = j.packs.AddEntry(e)
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("journal: repack: %w", err)
			}
			dest[ms[i].to.Pack] = true
			testHookReclaim("copying")
		}
		f.Close()
		moves = append(moves, ms...)
	}
	for id := range dest {
		if err := j.packs.SyncPack(id); err != nil {
			return err
		}
	}
	testHookReclaim("copied")
	if err := j.switchIndex(moves); err != nil {
		return err
	}
	testHookReclaim("switched")
	return j.dropPacks(plan)
}

// switchIndex points the index at the copies, for every entry that
// still names the place it was copied from.
func (j *Journal) switchIndex(moves []move) error {
	j.content.Lock()
	defer j.content.Unlock()
	for len(moves) > 0 {
		done := 0
		err := j.db.Update(func(txn *badger.Txn) error {
			for _, m := range moves {
				item, err := txn.Get(chunkKey(m.h))
				if errors.Is(err, badger.ErrKeyNotFound) {
					done++
					continue // deleted meanwhile: its copy is unused
				} else if err != nil {
					return err
				}
				var cur pack.Loc
				if err := item.Value(func(v []byte) (err error) { cur, err = pack.DecodeLoc(v); return err }); err != nil {
					return err
				}
				if cur == m.from {
					if err := txn.Set(chunkKey(m.h), m.to.Encode()); errors.Is(err, badger.ErrTxnTooBig) {
						return nil // commit these, the rest in the next
					} else if err != nil {
						return err
					}
				}
				done++
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("journal: repack: switch index: %w", err)
		}
		moves = moves[done:]
	}
	return nil
}
