package pack

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Codec compresses chunks, each a zstd frame of its own, and the
// journal's other compressed values. Its methods are safe for
// concurrent use.
type Codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// NewCodec returns a Codec; Close releases it.
func NewCodec() (*Codec, error) {
	// Each chunk (at most ChunkSize) is a frame of its own, so a window
	// of ChunkSize loses no match; the default kept 4 MiB of history
	// live, beside the daemon's 80 MiB heap limit.
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithLowerEncoderMem(true),
		zstd.WithWindowSize(ChunkSize))
	if err != nil {
		return nil, fmt.Errorf("journal: zstd: %w", err)
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(2*ChunkSize))
	if err != nil {
		enc.Close()
		return nil, fmt.Errorf("journal: zstd: %w", err)
	}
	return &Codec{enc: enc, dec: dec}, nil
}

// Compress appends the frame of b to dst.
func (c *Codec) Compress(dst, b []byte) []byte { return c.enc.EncodeAll(b, dst) }

// Decompress appends the bytes of the frame z to dst. A frame that
// would decode to more than twice ChunkSize is refused.
func (c *Codec) Decompress(dst, z []byte) ([]byte, error) { return c.dec.DecodeAll(z, dst) }

// Close releases the codec.
func (c *Codec) Close() {
	c.enc.Close()
	c.dec.Close()
}
