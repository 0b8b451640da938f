package runtime

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// BlobGetter is the part of a blob store that reading a segment list needs.
type BlobGetter interface {
	Get(ctx context.Context, d content.Digest) ([]byte, error)
}

// SegmentList is a stored segment list read back: its segments, and how
// many deltas lead to it from a whole (or chunked) list.
type SegmentList struct {
	Segments []core.CacheSegment
	Deltas   int
}

// ReadSegments loads a stored segment list: whole, chunked, or a delta on
// an earlier list. read (when not nil) holds lists read before, by digest,
// and takes the ones this call reads: a session's lists are mostly deltas
// on the one before, so reading them in order reads each blob once.
// Callers must not modify the segments it returns.
func ReadSegments(ctx context.Context, blobs BlobGetter, ref content.ContentRef, read map[content.Digest]SegmentList) (SegmentList, error) {
	if l, ok := read[ref.Digest]; ok {
		return l, nil
	}
	l, err := readSegmentsBlob(ctx, blobs, ref, read)
	if err == nil && read != nil {
		read[ref.Digest] = l
	}
	return l, err
}

func readSegmentsBlob(ctx context.Context, blobs BlobGetter, ref content.ContentRef, read map[content.Digest]SegmentList) (SegmentList, error) {
	data, err := blobs.Get(ctx, ref.Digest)
	if err != nil {
		return SegmentList{}, fmt.Errorf("segment list: %w", err)
	}
	switch ref.MediaType {
	case core.MediaRequestSegments:
		segs, err := core.DecodeSegments(data)
		return SegmentList{Segments: segs}, err
	case core.MediaRequestSegmentDelta:
		return readDelta(ctx, blobs, data, read)
	case core.MediaRequestSegmentIndex:
		segs, err := readChunked(ctx, blobs, data)
		return SegmentList{Segments: segs}, err
	}
	return SegmentList{}, fmt.Errorf("segment list of media type %q", ref.MediaType)
}

func readDelta(ctx context.Context, blobs BlobGetter, data []byte, read map[content.Digest]SegmentList) (SegmentList, error) {
	d, err := core.DecodeSegmentDelta(data)
	if err != nil {
		return SegmentList{}, err
	}
	base, err := ReadSegments(ctx, blobs, d.Base, read)
	if err != nil {
		return SegmentList{}, err
	}
	// The writer starts over from a whole list after SegmentDeltaDepth
	// deltas; a longer chain is not its output.
	if base.Deltas >= core.SegmentDeltaDepth {
		return SegmentList{}, fmt.Errorf("segment list: more than %d deltas from a whole list", core.SegmentDeltaDepth)
	}
	if d.Keep > len(base.Segments) {
		return SegmentList{}, fmt.Errorf("segment delta keeps %d segments of a list of %d", d.Keep, len(base.Segments))
	}
	return SegmentList{Segments: append(base.Segments[:d.Keep:d.Keep], d.Segments...), Deltas: base.Deltas + 1}, nil
}

func readChunked(ctx context.Context, blobs BlobGetter, data []byte) ([]core.CacheSegment, error) {
	ix, err := core.DecodeSegmentIndex(data)
	if err != nil {
		return nil, err
	}
	chunks := ix.Chunks
	for i, p := range ix.Pages {
		data, err := blobs.Get(ctx, p.Ref)
		if err != nil {
			return nil, fmt.Errorf("segment page %d: %w", i, err)
		}
		page, err := core.DecodeSegmentIndex(data)
		if err != nil {
			return nil, fmt.Errorf("segment page %d: %w", i, err)
		}
		if len(page.Chunks) != p.Count {
			return nil, fmt.Errorf("segment page %d holds %d chunks, its index says %d", i, len(page.Chunks), p.Count)
		}
		chunks = append(chunks, page.Chunks...)
	}
	var segs []core.CacheSegment
	for i, c := range chunks {
		data, err := blobs.Get(ctx, c.Ref)
		if err != nil {
			return nil, fmt.Errorf("segment chunk %d: %w", i, err)
		}
		chunk, err := core.DecodeSegments(data)
		if err != nil {
			return nil, fmt.Errorf("segment chunk %d: %w", i, err)
		}
		if len(chunk) != c.Count {
			return nil, fmt.Errorf("segment chunk %d holds %d segments, its index says %d", i, len(chunk), c.Count)
		}
		segs = append(segs, chunk...)
	}
	return segs, nil
}
