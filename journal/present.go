package journal

import "sync"

// presentChunks remembers chunks a lookup found in the index, so that
// content captured again and again — a database's empty pages, a file
// of repeated blocks — costs one Badger read per chunk, not one per
// capture. The chunk filter (pack.Filter) answers for new content; this
// answers for old. When a file repeats a few distinct blocks, nearly
// every capture is a dedup hit, and each would otherwise cost a Badger
// read transaction (two hand-offs to Badger's watermark goroutine).
//
// Remembering a chunk is only right while it stays in the index. Index
// entries leave only in dropRecords, under j.content held exclusively;
// every lookup holds j.content shared, from asking until its record
// naming the chunk is logged. dropRecords forgets everything first, so
// no lookup answers from before a deletion.
type presentChunks struct {
	mu sync.Mutex
	m  map[[32]byte]struct{}
}

// presentMax bounds what is remembered (~64 bytes each in the map).
const presentMax = 1 << 13

func (p *presentChunks) has(h [32]byte) bool {
	p.mu.Lock()
	_, ok := p.m[h]
	p.mu.Unlock()
	return ok
}

// add remembers h, forgetting an arbitrary other chunk when full.
func (p *presentChunks) add(h [32]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[[32]byte]struct{}{}
	}
	if len(p.m) >= presentMax {
		for k := range p.m {
			delete(p.m, k)
			break
		}
	}
	p.m[h] = struct{}{}
}

// forget empties it. The caller holds j.content exclusively.
func (p *presentChunks) forget() {
	p.mu.Lock()
	p.m = nil
	p.mu.Unlock()
}
