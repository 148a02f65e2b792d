package journal

import "encoding/binary"

// Key prefixes; see the package documentation.
const (
	prefixMeta        = 'M'
	prefixTurn        = 't'
	prefixRecord      = 'r'
	prefixChunk       = 'c'
	prefixRef         = 'x'
	prefixMarker      = 'k'
	prefixRollback    = 'b'
	prefixPlan        = 'p'
	prefixCounters    = 'N'
	prefixBinding     = 'W'
	prefixGone        = 'g' // ids of turns that left the window (gone.go)
	prefixFingerprint = 'f' // path -> what a rescan last saw there (fingerprint.go)
	prefixScanned     = 'S' // the sequence number the last rescan accounted for
	prefixEarly       = 'E' // when turns last left the window early (space.go)
	prefixLogMark     = 'L' // how far the record log is applied (walstore.go)
)

var metaKey = []byte{prefixMeta}

// packDirName is the directory of pack files beside Badger.
const packDirName = "packs"

func numKey(prefix byte, n uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefix
	binary.BigEndian.PutUint64(k[1:], n)
	return k
}

func turnKey(n uint64) []byte   { return numKey(prefixTurn, n) }
func recordKey(n uint64) []byte { return numKey(prefixRecord, n) }
func markerKey(n uint64) []byte { return numKey(prefixMarker, n) }

// keyNum returns the number in a key made by numKey.
func keyNum(k []byte) uint64 { return binary.BigEndian.Uint64(k[1:9]) }

func chunkKey(h [32]byte) []byte {
	k := chunkKeyOf(h)
	return k[:]
}

// chunkKeyOf is chunkKey as an array, for lookups that need not
// allocate it.
func chunkKeyOf(h [32]byte) (k [33]byte) {
	k[0] = prefixChunk
	copy(k[1:], h[:])
	return k
}

// refPrefix is the prefix of every reference to chunk h.
func refPrefix(h [32]byte) []byte {
	k := make([]byte, 33, 41)
	k[0] = prefixRef
	copy(k[1:], h[:])
	return k
}

func refKey(h [32]byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(refPrefix(h), seq)
}

// refSeq returns the record sequence in a key made by refKey.
func refSeq(k []byte) uint64 { return binary.BigEndian.Uint64(k[33:41]) }
