package wal

import (
	"encoding/binary"
	"hash/crc32"
)

// An entry: length of the payload (4 bytes) and its CRC-32C (4), then
// the payload: its operations, each a byte (opSet, opDelete), the key
// (uvarint length, bytes) and, for a set, the value (likewise). Lookup
// is not logged: it only matters while the entry is pending.
func encodeEntry(ops []Op) []byte {
	n := entryHeader
	for _, op := range ops {
		n += 1 + binary.MaxVarintLen32*2 + len(op.Key) + len(op.Val)
	}
	b := make([]byte, entryHeader, n)
	for _, op := range ops {
		if op.Delete {
			b = append(b, opDelete)
			b = binary.AppendUvarint(b, uint64(len(op.Key)))
			b = append(b, op.Key...)
			continue
		}
		b = append(b, opSet)
		b = binary.AppendUvarint(b, uint64(len(op.Key)))
		b = append(b, op.Key...)
		b = binary.AppendUvarint(b, uint64(len(op.Val)))
		b = append(b, op.Val...)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-entryHeader))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[entryHeader:], crcTable))
	return b
}

// decodeEntry reads the entry at the start of b: its operations and its
// length, or false if b holds no whole, intact entry there.
func decodeEntry(b []byte) ([]Op, int64, bool) {
	if len(b) < entryHeader {
		return nil, 0, false
	}
	n := int64(binary.BigEndian.Uint32(b))
	if n > maxEntry || int64(len(b)) < entryHeader+n {
		return nil, 0, false
	}
	p := b[entryHeader : entryHeader+n]
	if crc32.Checksum(p, crcTable) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	var ops []Op
	field := func() ([]byte, bool) {
		k, m := binary.Uvarint(p)
		if m <= 0 || uint64(len(p)-m) < k {
			return nil, false
		}
		f := p[m : m+int(k)]
		p = p[m+int(k):]
		return f, true
	}
	for len(p) > 0 {
		kind := p[0]
		p = p[1:]
		key, ok := field()
		if !ok {
			return nil, 0, false
		}
		op := Op{Delete: kind == opDelete, Key: key}
		switch kind {
		case opSet:
			if op.Val, ok = field(); !ok {
				return nil, 0, false
			}
		case opDelete:
		default:
			return nil, 0, false
		}
		ops = append(ops, op)
	}
	return ops, entryHeader + n, true
}
