package pack

import (
	"encoding/binary"
	"fmt"
)

const (
	packMagic  = "cowfspk1"
	packSuffix = ".pack"
	// HeaderSize is the bytes a pack takes before its first entry.
	HeaderSize = int64(len(packMagic))
	// EntryHeader is the bytes an entry takes before its stored bytes.
	EntryHeader = 40
	maxEntry    = EntryHeader + 2*ChunkSize // a corrupt length must not allocate more
)

// packTarget is the size at which the pack being written is sealed and
// a new one started. Smaller packs free space in finer steps; larger
// ones mean fewer files.
const packTarget = 8 << 20

// Loc is where an entry sits: pack, offset of its header, stored length.
type Loc struct {
	Pack uint64
	Off  int64
	N    uint32 // stored (compressed) bytes, without the header
}

// Size is the bytes the entry takes in its pack.
func (l Loc) Size() int64 { return EntryHeader + int64(l.N) }

// locVersion is the first byte of an encoded Loc.
const locVersion = 1

// Encode returns l as the journal's index keeps it: a version byte,
// then the pack, offset and length as uvarints.
func (l Loc) Encode() []byte {
	b := []byte{locVersion}
	b = binary.AppendUvarint(b, l.Pack)
	b = binary.AppendUvarint(b, uint64(l.Off))
	return binary.AppendUvarint(b, uint64(l.N))
}

// DecodeLoc reads a Loc made by Encode.
func DecodeLoc(b []byte) (Loc, error) {
	if len(b) == 0 || b[0] != locVersion {
		return Loc{}, fmt.Errorf("%w: chunk location has an unknown version", ErrCorrupt)
	}
	b = b[1:]
	var v [3]uint64
	for i := range v {
		n, m := binary.Uvarint(b)
		if m <= 0 {
			return Loc{}, fmt.Errorf("%w: chunk location does not decode", ErrCorrupt)
		}
		v[i], b = n, b[m:]
	}
	l := Loc{Pack: v[0], Off: int64(v[1]), N: uint32(v[2])}
	if len(b) != 0 || v[2] > 1<<32-1 || v[1] > 1<<63-1 || l.Off < HeaderSize {
		return Loc{}, fmt.Errorf("%w: chunk location does not decode", ErrCorrupt)
	}
	return l, nil
}
