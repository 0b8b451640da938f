package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// putSegments stores a segment list: as one list when it is short or
// there is no edge store to hold chunks, else in chunks behind an index
// (core.MediaRequestSegmentIndex) with edges to them.
//
// Chunks cut at fixed positions, so a session's next request repeats all
// but its last chunks. x.Pieces remembers the digest each chunk was stored
// under, so a repeated chunk is neither encoded nor stored again: the
// index's edges then hold it. When a remembered chunk has been collected
// since, PutEdges reports it missing and the list is stored again whole.
func (x *Executor) putSegments(ctx context.Context, sessionID string, segs []core.CacheSegment) (content.ContentRef, error) {
	if len(segs) <= core.SegmentChunk || x.Files == nil {
		data, err := core.EncodeSegments(segs)
		if err != nil {
			return content.ContentRef{}, err
		}
		return blob.PutRef(ctx, x.Blobs, data, core.MediaRequestSegments, "")
	}
	ref, err := x.putChunked(ctx, sessionID, segs, true)
	var missing *blob.MissingError
	if errors.As(err, &missing) {
		ref, err = x.putChunked(ctx, sessionID, segs, false)
	}
	return ref, err
}

// putChunked stores segs in chunks behind an index; with remembered, it
// takes the digests of chunks stored before from x.Pieces instead of
// storing them.
func (x *Executor) putChunked(ctx context.Context, sessionID string, segs []core.CacheSegment, remembered bool) (content.ContentRef, error) {
	var ix core.SegmentIndex
	var kids []content.Digest
	for _, chunk := range core.ChunkSegments(segs) {
		key := chunkKey(sessionID, chunk)
		d, ok := x.storedChunk(key, remembered)
		if !ok {
			data, err := core.EncodeSegments(chunk)
			if err != nil {
				return content.ContentRef{}, err
			}
			if d, err = x.Blobs.Put(ctx, data); err != nil {
				return content.ContentRef{}, err
			}
			x.Pieces.Put(key, d, int64(len(d)))
		}
		ix.Chunks = append(ix.Chunks, core.SegmentChunkRef{Ref: d, Count: len(chunk)})
		kids = append(kids, d)
	}
	data, err := json.Marshal(ix)
	if err != nil {
		return content.ContentRef{}, err
	}
	ref, err := blob.PutRef(ctx, x.Blobs, data, core.MediaRequestSegmentIndex, "")
	if err != nil {
		return content.ContentRef{}, err
	}
	content.SortDigests(kids)
	if err := x.Files.PutEdges(ctx, ref.Digest, slices.Compact(kids)); err != nil {
		return content.ContentRef{}, err
	}
	return ref, nil
}

// storedChunk returns the digest a chunk was stored under, when x.Pieces
// remembers it and remembered allows it.
func (x *Executor) storedChunk(key []byte, remembered bool) (content.Digest, bool) {
	if !remembered {
		return content.Digest{}, false
	}
	v, _ := x.Pieces.Get(key)
	d, ok := v.(content.Digest)
	return d, ok
}

// chunkKey names a chunk of a session's segment list by every field its
// stored form holds, without encoding it: SHA-256 over each field with
// its length. Digests are kept per session, like lowered entries.
func chunkKey(sessionID string, chunk []core.CacheSegment) []byte {
	var b []byte
	field := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	field(sessionID)
	for _, s := range chunk {
		field(s.Kind)
		field(s.Ref)
		field(s.Digest)
		b = binary.AppendVarint(b, s.Bytes)
		b = binary.AppendUvarint(b, uint64(len(s.Entries)))
		for _, e := range s.Entries {
			field(e)
		}
		b = binary.AppendUvarint(b, uint64(len(s.Keys)))
		for _, k := range s.Keys {
			field(k)
		}
	}
	sum := sha256.Sum256(b)
	return append([]byte("segment chunk\x00"), sum[:]...)
}
