package rollback

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// packed holds a plan's steps while they run. A large plan as a []Step
// is tens of megabytes, held from its first step to its last while the
// undo log's records stream into Badger beside it (issue #15: the
// daemon's resident set is bounded at 128 MiB). Packed, they are
// encoded (appendStep: exact for any bytes a name holds, which JSON is
// not) and zstd-compressed in parts of packSteps steps: about 25 bytes
// a step. A run decodes one part at a time, each step as it comes; a
// step, once decoded, is the run's own to keep.
//
// A stored plan holds its steps so too (Plan.stored): JSON would turn
// the bytes of a name that is not UTF-8 into U+FFFD, and a rollback
// finished after a crash would look for a path that never existed.
type packed struct {
	Parts [][]byte `json:"parts"` // base64 in JSON
	N     int      `json:"n"`
}

// packSteps is how many steps one part holds: a part is decoded whole
// to reach any step in it.
const packSteps = 512

// packWindow is the zstd window of a part: several times the 13 KB a
// part of 512 steps takes with paths of common length.
const packWindow = 256 << 10

var (
	// Parts are compressed one by one, so a window past a part's size
	// buys nothing; the default kept 4 MiB of history live.
	packEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(packWindow))
	packDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
)

// pack returns steps packed.
func pack(steps []Step) *packed {
	p := &packed{N: len(steps)}
	var buf []byte
	for i := range steps {
		buf = appendStep(buf, &steps[i])
		if (i+1)%packSteps == 0 || i == len(steps)-1 {
			p.Parts = append(p.Parts, packEnc.EncodeAll(buf, nil))
			buf = buf[:0]
		}
	}
	return p
}

// each calls fn with steps from on, in order, each decoded afresh, and
// stops at fn's first error.
func (p *packed) each(from int, fn func(i int, s *Step) error) error {
	var part, rest []byte
	for i := from; i < p.N; i++ {
		if i == from || i%packSteps == 0 {
			var err error
			if part, err = packDec.DecodeAll(p.Parts[i/packSteps], part[:0]); err != nil {
				return fmt.Errorf("rollback: packed steps: %w", err)
			}
			rest = part
			for k := i % packSteps; k > 0; k-- { // to step i within its part
				if _, rest, err = readStep(rest); err != nil {
					return fmt.Errorf("rollback: packed step %d: %w", i-k, err)
				}
			}
		}
		s, r, err := readStep(rest)
		if err != nil {
			return fmt.Errorf("rollback: packed step %d: %w", i, err)
		}
		rest = r
		if err := fn(i, s); err != nil {
			return err
		}
	}
	return nil
}

// appendStep appends s, encoded, to b: its fields in order, numbers as
// uvarints, strings and the list of covered steps length first.
func appendStep(b []byte, s *Step) []byte {
	b = binary.AppendUvarint(b, s.Seq)
	for _, str := range []string{string(s.Op), s.Path, s.Path2, s.Aside, s.Skip} {
		b = binary.AppendUvarint(b, uint64(len(str)))
		b = append(b, str...)
	}
	b = binary.AppendUvarint(b, s.Ino)
	b = binary.AppendUvarint(b, s.Ino2)
	b = binary.AppendUvarint(b, uint64(s.Type))
	dir := uint64(0)
	if s.Dir {
		dir = 1
	}
	b = binary.AppendUvarint(b, dir)
	b = binary.AppendUvarint(b, uint64(len(s.Covers)))
	for i := range s.Covers {
		b = appendStep(b, &s.Covers[i])
	}
	return b
}

var errPackedShort = errors.New("cut short")

// readStep decodes a step appendStep encoded at the start of b, and
// returns it with what follows.
func readStep(b []byte) (*Step, []byte, error) {
	s := new(Step)
	rest, err := readStepInto(s, b)
	return s, rest, err
}

// readStepInto decodes the step at the start of b into s.
func readStepInto(s *Step, b []byte) ([]byte, error) {
	num := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	str := func() string {
		n := num()
		if n > uint64(len(b)) {
			b = nil
			return ""
		}
		v := string(b[:n])
		b = b[n:]
		return v
	}
	s.Seq = num()
	if b == nil {
		return nil, errPackedShort
	}
	s.Op, s.Path, s.Path2, s.Aside, s.Skip = Op(str()), str(), str(), str(), str()
	s.Ino, s.Ino2, s.Type, s.Dir = num(), num(), uint32(num()), num() == 1
	covers := num()
	if b == nil || covers > uint64(len(b)) { // a step takes a byte at least
		return nil, errPackedShort
	}
	if covers > 0 {
		s.Covers = make([]Step, covers) // a tree's removes: 25,000 for Go's source
		for i := range s.Covers {
			rest, err := readStepInto(&s.Covers[i], b)
			if err != nil {
				return nil, err
			}
			b = rest
		}
	}
	return b, nil
}
