package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/dgraph-io/badger/v4"
)

// maxUnused is the share of the sealed packs' bytes that may be unused
// (named by no index entry) before reclaim repacks: the packs then take
// at most 1/(1-maxUnused) = 1.25 times the bytes the index needs.
const maxUnused = 0.2

// testHookReclaim is called at each step of a repack; crash tests kill
// the process there.
var testHookReclaim = func(step string) {}

// packUse is what the index says of one pack.
type packUse struct {
	id     uint64
	size   int64 // file length
	live   int64 // bytes of the entries the index names
	unused int64 // size - header - live
}

// reclaim gives back the space of content no record needs any more:
// packs no index entry names are deleted, and while more than
// maxUnused of the sealed packs' bytes are unused, the pack with the
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
	sealed, err := j.packs.seal()
	j.content.Unlock()
	if err != nil {
		return err
	}
	uses, err := j.packUses(sealed)
	if err != nil {
		return err
	}
	var dead, kept []packUse
	for _, u := range uses {
		if u.live == 0 {
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
	plan := planRepack(kept)
	if len(plan) == 0 {
		return nil
	}
	return j.repack(plan)
}

// packUses returns the use of every pack numbered below sealed.
func (j *Journal) packUses(sealed uint64) ([]packUse, error) {
	sizes, err := j.packs.list()
	if err != nil {
		return nil, err
	}
	live := map[uint64]int64{}
	err = j.eachLoc(func(_ [32]byte, l loc) error {
		live[l.pack] += l.size()
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []packUse
	for id, size := range sizes {
		if id >= sealed {
			continue
		}
		u := packUse{id: id, size: size, live: live[id]}
		u.unused = max(0, size-packHeader-u.live)
		out = append(out, u)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].id < out[b].id })
	return out, nil
}

// eachLoc calls fn with every index entry.
func (j *Journal) eachLoc(fn func(h [32]byte, l loc) error) error {
	return j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256, Prefix: []byte{prefixChunk}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var h [32]byte
			copy(h[:], it.Item().Key()[1:])
			var l loc
			err := it.Item().Value(func(v []byte) (err error) {
				l, err = decodeLoc(v)
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

// planRepack picks the packs to repack, most unused first, until no
// more than maxUnused of what is left would be unused.
func planRepack(uses []packUse) []packUse {
	var total, unused float64
	for _, u := range uses {
		total += float64(u.size)
		unused += float64(u.unused)
	}
	sort.Slice(uses, func(a, b int) bool { return uses[a].unused > uses[b].unused })
	var plan []packUse
	for _, u := range uses {
		if unused <= maxUnused*total || u.unused == 0 {
			break
		}
		plan = append(plan, u)
		// Its live bytes move to a new pack; its unused bytes go.
		total -= float64(u.unused + packHeader)
		unused -= float64(u.unused)
	}
	return plan
}

// dropPacks deletes packs the index names nothing in, once the index
// that says so is durable.
func (j *Journal) dropPacks(dead []packUse) error {
	if err := j.db.Sync(); err != nil {
		return fmt.Errorf("journal: sync index: %w", err)
	}
	var freed int64
	for _, u := range dead {
		if err := j.packs.remove(u.id); err != nil {
			return err
		}
		freed += u.size
	}
	j.log.Info("journal: deleted unused packs", "packs", len(dead), "bytes", freed)
	return nil
}

// move is one entry being repacked.
type move struct {
	h        [32]byte
	from, to loc
}

// repack copies the live entries of the planned packs into the pack
// being written, switches the index to the copies and deletes the
// packs (see reclaim for why each step is safe).
func (j *Journal) repack(plan []packUse) error {
	want := map[uint64]bool{}
	for _, u := range plan {
		want[u.id] = true
	}
	byPack := map[uint64][]move{}
	err := j.eachLoc(func(h [32]byte, l loc) error {
		if want[l.pack] {
			byPack[l.pack] = append(byPack[l.pack], move{h: h, from: l})
		}
		return nil
	})
	if err != nil {
		return err
	}
	var moves []move
	dest := map[uint64]bool{}
	for _, u := range plan {
		ms := byPack[u.id]
		sort.Slice(ms, func(a, b int) bool { return ms[a].from.off < ms[b].from.off })
		f, err := os.Open(filepath.Join(j.packs.dir, packName(u.id)))
		if err != nil {
			return fmt.Errorf("journal: repack: %w", err)
		}
		for i := range ms {
			e, err := j.packs.readEntry(f, ms[i].from, ms[i].h)
			if err == nil {
				ms[i].to, err = j.packs.addEntry(e)
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("journal: repack: %w", err)
			}
			dest[ms[i].to.pack] = true
			testHookReclaim("copying")
		}
		f.Close()
		moves = append(moves, ms...)
	}
	for id := range dest {
		if err := j.packs.syncPack(id); err != nil {
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
				var cur loc
				if err := item.Value(func(v []byte) (err error) { cur, err = decodeLoc(v); return err }); err != nil {
					return err
				}
				if cur == m.from {
					if err := txn.Set(chunkKey(m.h), encodeLoc(m.to)); errors.Is(err, badger.ErrTxnTooBig) {
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
