package pack

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// Filter answers "may the index hold chunk h?" without a Badger
// transaction. Deduplication asks it for every chunk a pre-image is cut
// into, and nearly every answer is no: a new 4 KiB range of a file is
// new content. Asking Badger is a read transaction, whose begin and
// end are two hand-offs to Badger's watermark goroutine, each a
// wake-up; random 4 KiB writes paid them on every write to a range not
// yet captured.
//
// It is a Bloom filter over the chunk hashes (SHA-256: their bits are
// already uniform, so the probe positions are taken from them), grown
// by adding a layer twice as large whenever the newest is full. It is
// filled at open from the index entries that survive the orphan sweep
// and by every chunk stored since. Nothing is ever removed: a chunk
// deleted by a prune stays a false "maybe", which costs a Badger lookup
// that finds nothing; the filter is rebuilt at the next open.
//
// A wrong "no" is harmless too: the chunk is stored again and its
// index entry names the new copy, as when two changes store the same
// new chunk at once (the journal's storeChunk), and the old copy is
// unused space that a repack gives back. So no ordering is needed between the filter
// and the record log; a chunk is added to the filter before its entry
// is logged, so a writer that finds the entry in neither place has at
// worst raced a writer storing the same bytes.
type Filter struct {
	mu     sync.Mutex // serialises growth
	layers atomic.Pointer[[]*bloomLayer]
}

// bloomLayer is one fixed-size Bloom filter.
type bloomLayer struct {
	words []atomic.Uint64
	mask  uint64 // bits - 1; the size is a power of two
	room  int64  // how many chunks it takes before it is full
	n     atomic.Int64
}

const (
	bloomProbes     = 7  // probes per chunk
	bloomBitsPerKey = 10 // with 7 probes, about 1% false "maybe"
	bloomMinKeys    = 1 << 16
)

func newBloomLayer(keys int64) *bloomLayer {
	bits := uint64(64)
	for bits < uint64(keys*bloomBitsPerKey) {
		bits <<= 1
	}
	return &bloomLayer{words: make([]atomic.Uint64, bits/64), mask: bits - 1, room: int64(bits / bloomBitsPerKey)}
}

// probes calls fn with the bit positions of h (double hashing).
func (b *bloomLayer) probes(h [32]byte, fn func(bit uint64) bool) bool {
	h1, h2 := binary.LittleEndian.Uint64(h[0:8]), binary.LittleEndian.Uint64(h[8:16])|1
	for i := range uint64(bloomProbes) {
		if !fn((h1 + i*h2) & b.mask) {
			return false
		}
	}
	return true
}

func (b *bloomLayer) add(h [32]byte) {
	b.probes(h, func(bit uint64) bool {
		b.words[bit/64].Or(1 << (bit % 64))
		return true
	})
	b.n.Add(1)
}

func (b *bloomLayer) mayHold(h [32]byte) bool {
	return b.probes(h, func(bit uint64) bool { return b.words[bit/64].Load()&(1<<(bit%64)) != 0 })
}

// NewFilter returns an empty filter; it grows with what is added.
func NewFilter() *Filter {
	f := &Filter{}
	layers := []*bloomLayer{newBloomLayer(bloomMinKeys)}
	f.layers.Store(&layers)
	return f
}

// Add notes that the index holds (or is about to hold) chunk h.
func (f *Filter) Add(h [32]byte) {
	layers := *f.layers.Load()
	last := layers[len(layers)-1]
	if last.n.Load() >= last.room {
		last = f.grow(last)
	}
	last.add(h)
}

// grow adds a layer twice the size of full, unless another add did.
func (f *Filter) grow(full *bloomLayer) *bloomLayer {
	f.mu.Lock()
	defer f.mu.Unlock()
	layers := *f.layers.Load()
	if last := layers[len(layers)-1]; last != full {
		return last
	}
	grown := append(layers[:len(layers):len(layers)], newBloomLayer(2*full.room))
	f.layers.Store(&grown)
	return grown[len(grown)-1]
}

// MayHold reports whether the index may hold chunk h; false means it
// certainly was not added.
func (f *Filter) MayHold(h [32]byte) bool {
	for _, l := range *f.layers.Load() {
		if l.mayHold(h) {
			return true
		}
	}
	return false
}
