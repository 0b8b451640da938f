package sqlite

import (
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// Inline blobs are stored compressed when that saves enough: most are JSON
// (checkpoint chunks, segment lists, native messages), which zstd shrinks
// three to five times. PostgreSQL compresses large values on its own
// (TOAST); SQLite does not, so the store does it. The digest and the size
// column stay those of the bytes themselves, and Get re-hashes what it
// decompressed, so compression is invisible above the store.
const (
	// encodingZstd marks a row whose inline column holds one zstd frame.
	// NULL means the bytes as they are.
	encodingZstd = "zstd"
	// compressMin is the smallest blob worth trying: below it the frame
	// header eats most of the gain.
	compressMin = 256
)

var (
	// One encoder and one decoder serve every store: EncodeAll and
	// DecodeAll may be called concurrently. The window fits the largest
	// inline blob, which keeps the encoders' memory small. The fastest
	// level: on a long chat's blobs (messages, segment lists, checkpoint
	// chunks) it stores as few bytes as the default level, in three
	// quarters of the time, and a turn stores several.
	zstdEncoder, _ = zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithWindowSize(InlineMax),
		zstd.WithEncoderCRC(false)) // Get verifies the digest instead
	// The decoder refuses a frame that claims more than an inline blob
	// can hold, so a damaged row cannot make it allocate without bound.
	zstdDecoder, _ = zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(InlineMax),
		zstd.WithDecoderMaxWindow(InlineMax))
)

// compressInline returns what to store in the inline column for data and
// its encoding: a zstd frame when it is at least an eighth smaller than
// data, else data itself with no encoding.
func compressInline(data []byte) ([]byte, *string) {
	if len(data) < compressMin {
		return data, nil
	}
	z := zstdEncoder.EncodeAll(data, make([]byte, 0, len(data)/2))
	if len(z) > len(data)-len(data)/8 {
		return data, nil
	}
	enc := encodingZstd
	return z, &enc
}

// decompressInline undoes compressInline for a row of digest d whose bytes
// are size long. A frame that does not decode, or decodes to another
// length, is corrupt data, not a store failure.
func decompressInline(d content.Digest, stored []byte, encoding string, size int64) ([]byte, error) {
	switch encoding {
	case "":
		return stored, nil
	case encodingZstd:
		if size > InlineMax {
			return nil, fmt.Errorf("%w: %s: an inline row records %d bytes", blob.ErrCorrupt, d, size)
		}
		data, err := zstdDecoder.DecodeAll(stored, make([]byte, 0, size))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: its stored bytes do not decompress: %v", blob.ErrCorrupt, d, err)
		}
		return data, nil
	default:
		return nil, fmt.Errorf("%w: %s: stored with unknown encoding %q", blob.ErrCorrupt, d, encoding)
	}
}
