package journal

import (
	"encoding/binary"
	"hash/crc32"
)

// An entry: length of the payload (4 bytes) and its CRC-32C (4), then
// the payload: its operations, each a byte (walOpSet, walOpDelete), the
// key (uvarint length, bytes) and, for a set, the value (likewise).
func encodeEntry(ops []walOp) []byte {
	n := walHeader
	for _, op := range ops {
		n += 1 + binary.MaxVarintLen32*2 + len(op.key) + len(op.val)
	}
	b := make([]byte, walHeader, n)
	for _, op := range ops {
		if op.del {
			b = append(b, walOpDelete)
			b = binary.AppendUvarint(b, uint64(len(op.key)))
			b = append(b, op.key...)
			continue
		}
		b = append(b, walOpSet)
		b = binary.AppendUvarint(b, uint64(len(op.key)))
		b = append(b, op.key...)
		b = binary.AppendUvarint(b, uint64(len(op.val)))
		b = append(b, op.val...)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-walHeader))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[walHeader:], crcTable))
	return b
}

// decodeEntry reads the entry at the start of b: its operations and its
// length, or false if b holds no whole, intact entry there.
func decodeEntry(b []byte) ([]walOp, int64, bool) {
	if len(b) < walHeader {
		return nil, 0, false
	}
	n := int64(binary.BigEndian.Uint32(b))
	if n > walMaxEntry || int64(len(b)) < walHeader+n {
		return nil, 0, false
	}
	p := b[walHeader : walHeader+n]
	if crc32.Checksum(p, crcTable) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	var ops []walOp
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
		op := walOp{del: kind == walOpDelete, key: key}
		switch kind {
		case walOpSet:
			if op.val, ok = field(); !ok {
				return nil, 0, false
			}
		case walOpDelete:
		default:
			return nil, 0, false
		}
		ops = append(ops, op)
	}
	return ops, walHeader + n, true
}
