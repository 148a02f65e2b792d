package journal

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cowfs/cowfs/journal/pack"
)

// recordVersion is the first byte of every record encoded now.
// Versions 1, which had no holes, 2, which had no flags, and 3, which
// had no command line, are still decoded; decoding refuses other
// versions rather than guess.
const recordVersion = 4

// Record flags (version 3 on).
const flagNotAgent = 1 << 0

// Limits that make a corrupt or hostile value fail to decode instead of
// allocating without bound.
const (
	maxStringLen = 64 << 10
	maxChunks    = 1 << 20
	maxHoles     = 1 << 20
	maxXattrLen  = 64 << 10
	// The command line is cut to 256 bytes when captured (fs); a
	// longer one is not one cowfs wrote.
	maxCmdlineLen = 1 << 10
)

// ErrCorrupt is returned for a value that does not decode: damage
// (ErrDamaged). It is package pack's, which finds damage in packs.
var ErrCorrupt = pack.ErrCorrupt

// encodeRecord appends r's encoding (everything but Seq, which is the
// key) to buf. Fields are written in a fixed order; see
// docs/journal-format.md.
func encodeRecord(buf []byte, r *Record) []byte {
	buf = append(buf, recordVersion)
	buf = binary.AppendUvarint(buf, r.Turn)
	buf = binary.AppendUvarint(buf, r.Group)
	buf = appendString(buf, r.Step)
	buf = binary.AppendVarint(buf, r.Time.UnixNano())
	buf = append(buf, byte(r.Kind), byte(r.Cause))
	buf = binary.AppendUvarint(buf, uint64(r.Type))
	buf = binary.AppendUvarint(buf, r.Ino)
	buf = binary.AppendUvarint(buf, r.Ino2)
	buf = appendString(buf, r.Path)
	buf = appendString(buf, r.Path2)
	buf = appendString(buf, r.Aside)
	buf = binary.AppendUvarint(buf, uint64(r.Flags))

	buf = binary.AppendUvarint(buf, uint64(r.Caller.Pid))
	buf = binary.AppendUvarint(buf, uint64(r.Caller.Uid))
	buf = binary.AppendUvarint(buf, uint64(r.Caller.Gid))
	buf = appendString(buf, r.Caller.Comm)

	a := &r.Attr
	buf = binary.AppendUvarint(buf, uint64(a.Mode))
	buf = binary.AppendUvarint(buf, uint64(a.Uid))
	buf = binary.AppendUvarint(buf, uint64(a.Gid))
	buf = binary.AppendVarint(buf, a.Size)
	buf = binary.AppendUvarint(buf, uint64(a.Nlink))
	buf = binary.AppendVarint(buf, a.Atime)
	buf = binary.AppendVarint(buf, a.Mtime)

	buf = binary.AppendVarint(buf, r.Off)
	buf = binary.AppendVarint(buf, r.Len)
	buf = binary.AppendUvarint(buf, uint64(len(r.Chunks)))
	for _, c := range r.Chunks {
		buf = append(buf, c.Hash[:]...)
		buf = binary.AppendUvarint(buf, uint64(c.Size))
	}
	// Holes as the gap since the previous hole's end (or Off) and a
	// length: sorted and disjoint by construction.
	buf = binary.AppendUvarint(buf, uint64(len(r.Holes)))
	pos := r.Off
	for _, h := range r.Holes {
		buf = binary.AppendUvarint(buf, uint64(h.Off-pos))
		buf = binary.AppendUvarint(buf, uint64(h.Len))
		pos = h.Off + h.Len
	}

	buf = appendString(buf, r.XattrName)
	buf = appendString(buf, string(r.XattrValue))
	if r.XattrExisted {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	buf = binary.AppendVarint(buf, r.Stored)
	buf = appendString(buf, string(r.Detail))
	var flags byte
	if r.NotAgent {
		flags |= flagNotAgent
	}
	buf = append(buf, flags)
	return appendString(buf, r.Caller.Cmdline)
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// decodeRecord is the inverse of encodeRecord. It never panics and
// never allocates more than the limits above, whatever b holds.
func decodeRecord(seq uint64, b []byte) (*Record, error) {
	d := decoder{b: b}
	version := d.byte()
	if version < 1 || version > recordVersion {
		return nil, fmt.Errorf("%w: record %d has version %d, want %d", ErrCorrupt, seq, version, recordVersion)
	}
	r := &Record{Seq: seq}
	r.Turn = d.uvarint()
	r.Group = d.uvarint()
	r.Step = d.string(maxStringLen)
	r.Time = time.Unix(0, d.varint())
	r.Kind = Kind(d.byte())
	r.Cause = Cause(d.byte())
	r.Type = d.uint32()
	r.Ino = d.uvarint()
	r.Ino2 = d.uvarint()
	r.Path = d.string(maxStringLen)
	r.Path2 = d.string(maxStringLen)
	r.Aside = d.string(maxStringLen)
	r.Flags = d.uint32()

	r.Caller.Pid = d.uint32()
	r.Caller.Uid = d.uint32()
	r.Caller.Gid = d.uint32()
	r.Caller.Comm = d.string(maxStringLen)

	a := &r.Attr
	a.Mode = d.uint32()
	a.Uid = d.uint32()
	a.Gid = d.uint32()
	a.Size = d.varint()
	a.Nlink = d.uint32()
	a.Atime = d.varint()
	a.Mtime = d.varint()

	r.Off = d.varint()
	r.Len = d.varint()
	n := d.uvarint()
	if n > maxChunks || n*33 > uint64(len(d.b)) {
		d.fail()
	} else if n > 0 {
		r.Chunks = make([]Chunk, n)
		for i := range r.Chunks {
			copy(r.Chunks[i].Hash[:], d.bytes(32))
			r.Chunks[i].Size = d.uint32()
		}
	}
	if version >= 2 {
		r.Holes = d.holes(r.Off, r.Len)
	}

	r.XattrName = d.string(maxStringLen)
	if v := d.string(maxXattrLen); v != "" {
		r.XattrValue = []byte(v)
	}
	r.XattrExisted = d.byte() == 1
	r.Stored = d.varint()
	if v := d.string(maxStringLen); v != "" {
		r.Detail = []byte(v)
	}
	if version >= 3 {
		flags := d.byte()
		if flags&^flagNotAgent != 0 {
			d.fail() // a flag this version does not know: refuse, never guess
		}
		r.NotAgent = flags&flagNotAgent != 0
	}
	if version >= 4 {
		r.Caller.Cmdline = d.string(maxCmdlineLen)
	}
	if d.err || len(d.b) != 0 {
		return nil, fmt.Errorf("%w: record %d does not decode", ErrCorrupt, seq)
	}
	return r, nil
}

// holes reads the holes of a record covering [off, off+n): each must
// be non-empty and end within the range.
func (d *decoder) holes(off, n int64) []Hole {
	k := d.uvarint()
	if k == 0 {
		return nil
	}
	if k > maxHoles || k*2 > uint64(len(d.b)) || off < 0 || n < 0 {
		d.fail()
		return nil
	}
	holes := make([]Hole, k)
	pos, end := uint64(off), uint64(off)+uint64(n)
	for i := range holes {
		gap, l := d.uvarint(), d.uvarint()
		if gap > end-pos || l == 0 || l > end-pos-gap {
			d.fail()
			return nil
		}
		holes[i] = Hole{Off: int64(pos + gap), Len: int64(l)}
		pos += gap + l
	}
	return holes
}

// decoder reads from b and remembers the first failure; every read
// after a failure returns zero.
type decoder struct {
	b   []byte
	err bool
}

func (d *decoder) fail() { d.err, d.b = true, nil }

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(n int) []byte {
	if len(d.b) < n {
		d.fail()
		return make([]byte, n)
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail()
		return 0
	}
	return uint32(v)
}

func (d *decoder) string(max int) string {
	n := d.uvarint()
	if n > uint64(max) || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	return string(d.bytes(int(n)))
}
