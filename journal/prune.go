package journal

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Prune drops the turns that have left the window, every record before
// the oldest kept turn, the chunks only those records referenced and the
// rollback markers of dropped turns; then it gives back the space of
// content no record needs (reclaim.go) and runs Badger's value-log
// garbage collection for its own files.
//
// dropAside is called with every aside name the dropped records hold,
// before the records go: the caller frees the inodes kept aside. An
// error from it stops the prune with the records still in place, so a
// later prune tries again.
//
// Each step is idempotent and a crash between steps is safe: turn keys
// go first (so the turns leave the window at once), then aside inodes,
// then records and chunks. Prune run again — at the next open, say —
// finds the records left behind before the oldest kept turn and
// finishes.
func (j *Journal) Prune(dropAside func(name string) error) error {
	if j.closed.Load() {
		return ErrClosed
	}
	j.pruneMu.Lock()
	defer j.pruneMu.Unlock()
	if err := j.leaveWindow(j.opts.window(), PruneWindow, dropAside, false); err != nil {
		return err
	}
	if err := j.reclaim(); err != nil {
		return err
	}
	j.collectGarbage()
	return nil
}

// leaveWindow drops all turns but the latest keep, and everything
// before them (see Prune), for reason (a turn_pruned event says so).
// gateHeld says the caller holds the gate, shared.
func (j *Journal) leaveWindow(keep int, reason string, dropAside func(name string) error, gateHeld bool) error {
	turns, err := j.Turns()
	if err != nil {
		return err
	}
	if len(turns) == 0 || (len(turns) <= keep && turns[0].Num == 1) {
		return nil // nothing has ever left the window
	}
	var drop [][]byte
	if len(turns) > keep {
		gone := turns[:len(turns)-keep]
		for _, t := range gone {
			drop = append(drop, turnKey(t.Num))
		}
		turns = turns[len(turns)-keep:]
		if err := j.rememberGone(gone, turns[0].Num); err != nil {
			return err
		}
		if err := j.deleteKeys(drop); err != nil {
			return err
		}
		// Reported after the fact: a crash before leaves the turns
		// gone unreported, never reported and still there.
		if err := j.reportPruned(gone, reason, gateHeld); err != nil {
			return err
		}
		if reason != PruneWindow {
			j.log.Warn("journal: turns left the window early", "reason", reason, "through", gone[len(gone)-1].Num)
		}
	}
	cutoff := turns[0].StartSeq
	if err := j.dropMarkersBefore(turns[0].Num); err != nil {
		return err
	}

	dropped := 0
	done := j.deleting()
	defer done()
	err = j.scanBatches(0, cutoff, func(*Record) bool { return true }, func(recs []*Record) error {
		for _, r := range recs {
			if r.Aside != "" {
				if err := dropAside(r.Aside); err != nil {
					return fmt.Errorf("journal: prune: free aside %s: %w", r.Aside, err)
				}
			}
		}
		dropped += len(recs)
		return j.dropRecords(recs)
	})
	if err != nil {
		return err
	}
	if dropped > 0 {
		j.log.Info("journal: pruned", "records", dropped, "before_turn", turns[0].Num)
	}
	return nil
}

// reportPruned journals a turn_pruned event for each turn in gone.
func (j *Journal) reportPruned(gone []Turn, reason string, gateHeld bool) error {
	if !gateHeld {
		j.gate.RLock()
		defer j.gate.RUnlock()
	}
	for _, t := range gone {
		if err := j.appendEvent(0, "", EventTurnPruned, prunedEvent{Turn: t.Num, ID: t.ID, Reason: reason}); err != nil {
			return err
		}
	}
	return nil
}

// dropRecords deletes records, their chunk references, and every chunk
// left with no reference. It holds j.content exclusively so no append
// can find a chunk present and then lose it.
func (j *Journal) dropRecords(recs []*Record) error {
	j.content.Lock()
	defer j.content.Unlock()
	j.present.forget()
	var keys [][]byte
	touched := map[[32]byte]bool{}
	for _, r := range recs {
		keys = append(keys, recordKey(r.Seq))
		for _, c := range r.Chunks {
			keys = append(keys, refKey(c.Hash, r.Seq))
			touched[c.Hash] = true
		}
	}
	if err := j.deleteKeys(keys); err != nil {
		return err
	}
	var chunks [][]byte
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixRef}})
		defer it.Close()
		for h := range touched {
			p := refPrefix(h)
			it.Seek(p)
			if !it.ValidForPrefix(p) {
				chunks = append(chunks, chunkKey(h))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: prune: %w", err)
	}
	return j.deleteKeys(chunks)
}

// collectGarbage rewrites value-log files whose content is mostly
// deleted. Badger reclaims nothing unless asked, one file per call,
// until it answers ErrNoRewrite. Content is not in Badger; only values
// over the value threshold (options.go) reach its value log.
func (j *Journal) collectGarbage() {
	for i := 0; i < 64; i++ {
		err := j.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return
		}
		if err != nil {
			j.log.Warn("journal: value-log GC", "err", err)
			return
		}
	}
}

// dropMarkersBefore deletes the rollback markers of turns before n.
func (j *Journal) dropMarkersBefore(n uint64) error {
	var keys [][]byte
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixMarker}})
		defer it.Close()
		for it.Rewind(); it.Valid() && keyNum(it.Item().Key()) < n; it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: prune markers: %w", err)
	}
	return j.deleteKeys(keys)
}
