package sqlite

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Events are short JSON (a few hundred bytes) that repeat the same keys,
// kinds and media types, so each is stored compressed against a fixed
// dictionary of those (event_dict1.go): a 1,000-turn chat's events shrink
// from 2.6 MB to under 1 MB. The record compressed is the joins column's
// JSON (empty when NULL), a newline, and the payload; the row then holds
// the frame in payload, NULL in joins, and its encoding. A payload is
// returned byte for byte as it was appended.
const (
	eventEncodingZD1 = "zd1"
	// eventCompressMax bounds the records compressed, and so what a frame
	// may decode to: a larger event (rare) is stored as it is.
	eventCompressMax = 1 << 20
)

var (
	// Every call starts from the dictionary's tables, a copy whose size
	// follows the level and the window: the fastest level with a 64 KiB
	// window costs ~14 µs an event (the default level with a 1 MiB
	// window, 116 µs) and compresses these as well. A larger record still
	// encodes; its matches reach back 64 KiB. With a checksum: nothing
	// else verifies an event.
	eventEncoder, _ = zstd.NewWriter(nil,
		zstd.WithEncoderDictRaw(1, []byte(eventDictionary1)),
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithWindowSize(64<<10))
	eventDecoder, _ = zstd.NewReader(nil,
		zstd.WithDecoderDictRaw(1, []byte(eventDictionary1)),
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(eventCompressMax),
		zstd.WithDecoderMaxWindow(eventCompressMax))
)

// encodeEvent returns the columns of an event whose joins encode as joins
// (nil: NULL): compressed on its own when that saves an eighth or more,
// else as they are.
func encodeEvent(joins, payload []byte) eventColumns {
	plain := eventColumns{payload: payload}
	if joins != nil {
		plain.joins = string(joins)
	}
	n := recordLen(joins, payload)
	if n > eventCompressMax {
		return plain
	}
	rec := appendRecord(make([]byte, 0, n), joins, payload)
	z := eventEncoder.EncodeAll(rec, make([]byte, 0, n/2))
	if len(z) > n-n/8 {
		return plain
	}
	return eventColumns{payload: z, encoding: eventEncodingZD1}
}

// decodeEvent undoes encodeEvent for a row stored on its own: it returns
// the joins JSON (nil for NULL) and the payload.
func decodeEvent(joins []byte, joinsValid bool, payload []byte, encoding string) ([]byte, []byte, error) {
	switch encoding {
	case "":
		if !joinsValid {
			joins = nil
		}
		return joins, payload, nil
	case eventEncodingZD1:
		rec, err := eventDecoder.DecodeAll(payload, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("the stored event does not decompress: %w", err)
		}
		return splitRecord(rec)
	default:
		return nil, nil, fmt.Errorf("the stored event has unknown encoding %q", encoding)
	}
}

// recordLen is the length of the record appendRecord makes.
func recordLen(joins, payload []byte) int { return len(joins) + 1 + len(payload) }

// appendRecord appends the record an event is compressed as: its joins
// JSON (none for NULL), a newline, its payload.
func appendRecord(dst, joins, payload []byte) []byte {
	return append(append(append(dst, joins...), '\n'), payload...)
}

// splitRecord returns the joins JSON (nil for NULL) and the payload of a
// compressed record.
func splitRecord(rec []byte) ([]byte, []byte, error) {
	i := bytes.IndexByte(rec, '\n') // JSON joins hold no raw newline
	if i < 0 {
		return nil, nil, fmt.Errorf("the stored event has no joins line")
	}
	if i == 0 {
		return nil, rec[1:], nil
	}
	return rec[:i], rec[i+1:], nil
}
