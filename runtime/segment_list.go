package runtime

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// segmentChunks keeps segment chunks decoded, by digest, for every
// session of the process: a chunked list is read whole every
// SegmentDeltaDepth lists, and a session's consecutive whole lists repeat
// all but their last chunks, so a report of a long session would decode
// the same chunks again page after page. A chunk never changes (its
// digest names it), so it is shared; the bound keeps memory flat.
var segmentChunks = provider.NewPieces(32 << 20)

// BlobGetter is the part of a blob store that reading a segment list needs.
type BlobGetter interface {
	Get(ctx context.Context, d content.Digest) ([]byte, error)
}

// SegmentList is a stored segment list read back: its segments, their
// bytes (core.SegmentTotal), and how many deltas lead to it from a whole
// (or chunked) list.
type SegmentList struct {
	Segments []core.CacheSegment
	Bytes    int64
	Deltas   int
	// Base and Keep are, for a list stored as a delta, the list it
	// extends and how many of that list's segments it begins with (zero
	// values for a whole list).
	Base content.Digest
	Keep int
	// shared holds Segments: a delta read on this list extends it, in
	// place when it can (core.SharedSlice), so reading a session's lists
	// in order costs what each delta adds, not a copy of the whole list.
	shared core.SharedSlice[core.CacheSegment]
}

// wholeList is a list read whole: its segments are the shared slice's,
// which the deltas read on it extend.
func wholeList(segs []core.CacheSegment) SegmentList {
	shared := core.SharedSlice[core.CacheSegment]{}.Extend(0, segs...)
	return SegmentList{Segments: shared.Items(), Bytes: core.SegmentTotal(segs), shared: shared}
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
		return wholeList(segs), err
	case core.MediaRequestSegmentDelta:
		return readDelta(ctx, blobs, data, read)
	case core.MediaRequestSegmentIndex:
		segs, err := readChunked(ctx, blobs, data)
		return wholeList(segs), err
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
	shared := base.shared.Extend(d.Keep, d.Segments...)
	bytes := base.Bytes - core.SegmentTotal(base.Segments[d.Keep:]) + core.SegmentTotal(d.Segments)
	return SegmentList{Segments: shared.Items(), Bytes: bytes, Deltas: base.Deltas + 1, Base: d.Base.Digest, Keep: d.Keep, shared: shared}, nil
}

func readChunked(ctx context.Context, blobs BlobGetter, data []byte) ([]core.CacheSegment, error) {
	ix, err := core.DecodeSegmentIndex(data)
	if err != nil {
		return nil, err
	}
	chunks, err := chunksOf(ctx, blobs, ix, nil)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, c := range chunks {
		total += c.Count
	}
	// The chunks no list read lately are read at once (the first request
	// of a session in a process reads its last list whole).
	var unread []content.Digest
	for _, c := range chunks {
		if _, ok := cachedChunk(c); !ok {
			unread = append(unread, c.Ref)
		}
	}
	got, err := blob.GetMany(ctx, blobs, unread)
	if err != nil {
		return nil, err
	}
	segs := make([]core.CacheSegment, 0, total)
	for i, c := range chunks {
		chunk, err := readChunk(ctx, blobs, c, got)
		if err != nil {
			return nil, fmt.Errorf("segment chunk %d: %w", i, err)
		}
		segs = append(segs, chunk...)
	}
	return segs, nil
}

// chunksOf appends the chunks an index or a page names to chunks, reading
// its pages, and theirs, a level at a time.
func chunksOf(ctx context.Context, blobs BlobGetter, ix core.SegmentIndex, chunks []core.SegmentChunkRef) ([]core.SegmentChunkRef, error) {
	chunks = append(chunks, ix.Chunks...)
	for i, p := range ix.Pages {
		data, err := blobs.Get(ctx, p.Ref)
		if err != nil {
			return nil, fmt.Errorf("segment page %d at depth %d: %w", i, ix.Depth, err)
		}
		page, err := core.DecodeSegmentIndex(data)
		if err != nil {
			return nil, fmt.Errorf("segment page %d at depth %d: %w", i, ix.Depth, err)
		}
		// A page of depth 0 names chunks; one above it, pages a level down.
		names, want := len(page.Chunks), "chunks"
		if ix.Depth > 0 {
			names, want = len(page.Pages), fmt.Sprintf("pages of depth %d", ix.Depth-1)
		}
		if names != p.Count || ix.Depth > 0 && page.Depth != ix.Depth-1 {
			return nil, fmt.Errorf("segment page %d at depth %d does not hold the %d %s its index says", i, ix.Depth, p.Count, want)
		}
		if chunks, err = chunksOf(ctx, blobs, page, chunks); err != nil {
			return nil, err
		}
	}
	return chunks, nil
}

// readChunk returns the segments of a chunk, decoded once while
// segmentChunks keeps them; its bytes come from got when they are there.
// Callers must not modify them.
func readChunk(ctx context.Context, blobs BlobGetter, c core.SegmentChunkRef, got map[content.Digest][]byte) ([]core.CacheSegment, error) {
	if chunk, ok := cachedChunk(c); ok {
		return chunk, nil
	}
	data, ok := got[c.Ref]
	if !ok {
		var err error
		if data, err = blobs.Get(ctx, c.Ref); err != nil {
			return nil, err
		}
	}
	chunk, err := core.DecodeSegments(data)
	if err != nil {
		return nil, err
	}
	if len(chunk) != c.Count {
		return nil, fmt.Errorf("it holds %d segments, its index says %d", len(chunk), c.Count)
	}
	segmentChunks.Put(c.Ref[:], chunk, int64(len(chunk))*segmentBytes+int64(len(data)))
	return chunk, nil
}

// cachedChunk is a chunk's segments if segmentChunks keeps them.
func cachedChunk(c core.SegmentChunkRef) ([]core.CacheSegment, bool) {
	if v, ok := segmentChunks.Get(c.Ref[:]); ok {
		if chunk := v.([]core.CacheSegment); len(chunk) == c.Count {
			return chunk, true
		}
	}
	return nil, false
}
