package pack

import (
	"crypto/sha256"
	"math/rand/v2"
)

// Content is cut into chunks where the content says, not at fixed
// offsets (content-defined chunking, as restic and FastCDC do): a cut
// falls after any 64-byte window whose gear hash has its top cutBits
// bits clear. A file rewritten with a few bytes inserted, removed or
// changed is cut the same way everywhere but near the change, so its
// pre-image shares all other chunks with the pre-image journaled the
// turn before, and those are stored once.
//
// Chunks are at least MinChunk bytes (a shorter range is one chunk),
// at most ChunkSize, about MinChunk + 2^cutBits on average.
const (
	// MinChunk is the fewest bytes a chunk holds, but for the last.
	MinChunk = 64 << 10
	// ChunkSize is the most uncompressed bytes one chunk holds.
	ChunkSize = 1 << 20
	cutBits   = 18
	cutMask   = uint64(1<<cutBits-1) << (64 - cutBits)
)

// gear maps each byte to a random 64-bit number. The numbers only
// decide where chunks are cut; changing them costs deduplication
// against content stored before the change, never correctness.
var gear = func() [256]uint64 {
	var g [256]uint64
	r := rand.New(rand.NewPCG(0x636f77667321, 0x6765617231))
	for i := range g {
		g[i] = r.Uint64()
	}
	return g
}()

// Cut returns the length of the first chunk of b. If b is the end of
// the content, the last chunk may be shorter than MinChunk; otherwise b
// must hold ChunkSize bytes or more for the cut not to depend on how
// much was read.
func Cut(b []byte) int {
	if len(b) <= MinChunk {
		return len(b)
	}
	b = b[:min(len(b), ChunkSize)]
	var h uint64
	for _, c := range b[MinChunk-64 : MinChunk] {
		h = h<<1 + gear[c]
	}
	for i, c := range b[MinChunk:] {
		h = h<<1 + gear[c]
		if h&cutMask == 0 {
			return MinChunk + i + 1
		}
	}
	return len(b)
}

// Hash is the hash content is addressed by: SHA-256 of the
// uncompressed bytes.
func Hash(b []byte) [32]byte { return sha256.Sum256(b) }
