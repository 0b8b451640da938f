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

// storedSegments is a request's segment list as putSegments stored it:
// where, how many of its segments begin the list of the session's last
// request (keep; -1: no such list could be read), their bytes, and the
// bytes of all its segments (core.SegmentTotal).
type storedSegments struct {
	ref       content.ContentRef
	keep      int
	keptBytes int64
	bytes     int64
}

// putSegments stores a segment list, and says how many of its segments
// begin the list of the session's last request (-1: no such list could be
// read) and the bytes of both, counted from the last list's total and
// what this one drops and adds: a turn of a long session does not add up
// every segment again. When the list of the session's last
// request (last, from the log) shares a prefix with this one, it stores
// only the difference (core.MediaRequestSegmentDelta) with an edge to that
// list's blob, up to core.SegmentDeltaDepth deltas in a row. Otherwise it
// stores the list whole when it is short or there is no edge store to hold
// chunks, else in chunks behind an index (core.MediaRequestSegmentIndex)
// with edges to them. What it stores depends on the log, never on what
// this process remembers: a worker that restarts, or another worker,
// stores the same blob.
//
// Chunks cut at fixed positions, so a session's next request repeats all
// but its last chunks. x.Pieces remembers the digest each chunk was stored
// under, so a repeated chunk is neither encoded nor stored again: the
// index's edges then hold it. When a remembered blob (a chunk, or a
// delta's base) has been collected since, PutEdges reports it missing and
// the list is stored again whole.
func (x *Executor) putSegments(ctx context.Context, sessionID string, last *content.ContentRef, segs []core.CacheSegment) (storedSegments, error) {
	out := storedSegments{keep: -1} // no last list to compare with
	var whole wholeChunks           // what the list at last shares with the last one stored whole
	if last != nil && x.Files != nil {
		if prev, known, ok := x.lastList(ctx, sessionID, *last); ok {
			out.keep = core.SegmentsPrefix(prev.Segments, segs)
			out.keptBytes = prev.Bytes - core.SegmentTotal(prev.Segments[out.keep:])
			out.bytes = out.keptBytes + core.SegmentTotal(segs[out.keep:])
			whole = known.within(out.keep)
			if prev.Deltas < core.SegmentDeltaDepth && out.keep > 0 {
				ref, err := x.putDelta(ctx, core.SegmentDelta{Base: *last, Keep: out.keep, Segments: segs[out.keep:]})
				var missing *blob.MissingError
				if err == nil {
					out.ref = ref
					x.rememberSegments(sessionID, storedList{ref: ref, list: SegmentList{Segments: segs, Bytes: out.bytes, Deltas: prev.Deltas + 1}, whole: whole})
					return out, nil
				} else if !errors.As(err, &missing) {
					return out, err
				}
			}
		}
	}
	if out.keep < 0 {
		out.bytes = core.SegmentTotal(segs)
	}
	ref, chunks, err := x.putWhole(ctx, sessionID, segs, whole)
	if err == nil {
		out.ref = ref
		x.rememberSegments(sessionID, storedList{ref: ref, list: SegmentList{Segments: segs, Bytes: out.bytes},
			whole: wholeChunks{chunks: chunks, shared: len(segs)}})
	}
	return out, err
}

// wholeChunks is what a session's last stored segment list shares with
// the last one it stored whole in chunks: those chunks, and how many
// leading segments the two lists have in common. Chunks cut at fixed
// positions, so a chunk that lies within the common segments is the same
// chunk in both, and storing the list whole again takes its digest from
// here instead of naming it by its segments (chunkKey): at 10,000 turns
// that was 313 chunks of 64 segments hashed every SegmentDeltaDepth turns.
type wholeChunks struct {
	chunks []core.SegmentChunkRef
	shared int
}

// within is w for a list that begins with the first keep segments of the
// one w describes.
func (w wholeChunks) within(keep int) wholeChunks {
	return wholeChunks{chunks: w.chunks, shared: min(w.shared, keep)}
}

// reusable is how many leading chunks of w lie within the common
// segments.
func (w wholeChunks) reusable() int {
	return min(w.shared/core.SegmentChunk, len(w.chunks))
}

// lastList returns the list stored at last: from x.Pieces when it holds
// the session's list stored there (with what it shares with the last
// list stored whole), else read back from its blobs (after a restart, or
// when another worker stored it). A list that cannot be read (collected
// since) gives none, and the new list is stored whole.
func (x *Executor) lastList(ctx context.Context, sessionID string, last content.ContentRef) (SegmentList, wholeChunks, bool) {
	v, _ := x.Pieces.Get(lastSegmentsKey(sessionID))
	if l, ok := v.(storedList); ok && l.ref.Digest == last.Digest {
		return l.list, l.whole, true
	}
	l, err := ReadSegments(ctx, x.Blobs, last, nil)
	return l, wholeChunks{}, err == nil
}

// putWhole stores a segment list without a delta, and returns its chunks
// (none when it is stored in one blob). The leading chunks whole names
// are taken as they are.
func (x *Executor) putWhole(ctx context.Context, sessionID string, segs []core.CacheSegment, whole wholeChunks) (content.ContentRef, []core.SegmentChunkRef, error) {
	if len(segs) <= core.SegmentChunk || x.Files == nil {
		data, err := core.EncodeSegments(segs)
		if err != nil {
			return content.ContentRef{}, nil, err
		}
		ref, err := blob.PutRef(ctx, x.Blobs, data, core.MediaRequestSegments, "")
		return ref, nil, err
	}
	ref, chunks, err := x.putChunked(ctx, sessionID, segs, whole.chunks[:whole.reusable()], true)
	var missing *blob.MissingError
	if errors.As(err, &missing) {
		ref, chunks, err = x.putChunked(ctx, sessionID, segs, nil, false)
	}
	return ref, chunks, err
}

// putDelta stores a delta and its edge to its base.
func (x *Executor) putDelta(ctx context.Context, d core.SegmentDelta) (content.ContentRef, error) {
	data, err := core.EncodeSegmentDelta(d)
	if err != nil {
		return content.ContentRef{}, err
	}
	ref, err := blob.PutRef(ctx, x.Blobs, data, core.MediaRequestSegmentDelta, "")
	if err != nil {
		return content.ContentRef{}, err
	}
	if err := x.Files.PutEdges(ctx, ref.Digest, []content.Digest{d.Base.Digest}); err != nil {
		return content.ContentRef{}, err
	}
	return ref, nil
}

// storedList is a session's last stored segment list, where it is, and
// what it shares with the last list stored whole.
type storedList struct {
	ref   content.ContentRef
	list  SegmentList
	whole wholeChunks
}

// segmentBytes approximates what a segment costs in memory.
const segmentBytes = 160

func lastSegmentsKey(sessionID string) []byte {
	return append([]byte("segment list\x00"), sessionID...)
}

func (x *Executor) rememberSegments(sessionID string, l storedList) {
	x.Pieces.Put(lastSegmentsKey(sessionID), l, int64(len(l.list.Segments))*segmentBytes+int64(len(l.whole.chunks))*int64(len(content.Digest{})+8))
}

// putChunked stores segs in chunks behind an index, or behind pages of
// chunks when there are more than core.SegmentPage, and pages of those
// pages while a level has more than core.SegmentPage, and returns the
// chunks. With remembered, it takes the digests of its first chunks from
// known (the last list stored whole), and those of other chunks and pages
// stored before from x.Pieces, instead of storing them (and recording
// their edges) again; without, it stores every one.
func (x *Executor) putChunked(ctx context.Context, sessionID string, segs []core.CacheSegment, known []core.SegmentChunkRef, remembered bool) (content.ContentRef, []core.SegmentChunkRef, error) {
	if !remembered {
		known = nil
	}
	chunks := slices.Clone(known)
	var scratch []byte // chunkKey's, for every chunk in turn
	for _, chunk := range core.ChunkSegments(segs[len(known)*core.SegmentChunk:]) {
		var key []byte
		key, scratch = chunkKey(scratch[:0], sessionID, chunk)
		d, ok := x.storedDigest(key, remembered)
		if !ok {
			data, err := core.EncodeSegments(chunk)
			if err != nil {
				return content.ContentRef{}, nil, err
			}
			if d, err = x.Blobs.Put(ctx, data); err != nil {
				return content.ContentRef{}, nil, err
			}
			x.Pieces.Put(key, d, int64(len(d)))
		}
		chunks = append(chunks, core.SegmentChunkRef{Ref: d, Count: len(chunk)})
	}
	// Each level cuts the one below into pages at fixed positions, so
	// only the last page of a level changes as the list grows.
	refs, depth := chunks, -1 // refs are chunks, then pages of depth
	for len(refs) > core.SegmentPage {
		var pages []core.SegmentChunkRef
		for rest := refs; len(rest) > 0; {
			n := min(core.SegmentPage, len(rest))
			d, err := x.putPage(ctx, sessionID, segmentNode(rest[:n], depth), remembered)
			if err != nil {
				return content.ContentRef{}, nil, err
			}
			pages = append(pages, core.SegmentChunkRef{Ref: d, Count: n})
			rest = rest[n:]
		}
		refs, depth = pages, depth+1
	}
	data, err := json.Marshal(segmentNode(refs, depth))
	if err != nil {
		return content.ContentRef{}, nil, err
	}
	ref, err := blob.PutRef(ctx, x.Blobs, data, core.MediaRequestSegmentIndex, "")
	if err != nil {
		return content.ContentRef{}, nil, err
	}
	if err := x.Files.PutEdges(ctx, ref.Digest, childRefs(refs)); err != nil {
		return content.ContentRef{}, nil, err
	}
	return ref, chunks, nil
}

// segmentNode is an index or a page naming refs: chunks when depth is -1,
// else pages of that depth.
func segmentNode(refs []core.SegmentChunkRef, depth int) core.SegmentIndex {
	if depth < 0 {
		return core.SegmentIndex{Chunks: refs}
	}
	return core.SegmentIndex{Pages: refs, Depth: depth}
}

// putPage stores a page with its edges to the refs it names, unless
// x.Pieces remembers storing it (and remembered allows that).
func (x *Executor) putPage(ctx context.Context, sessionID string, page core.SegmentIndex, remembered bool) (content.Digest, error) {
	refs, kind := page.Chunks, byte('c')
	if len(page.Pages) > 0 {
		refs, kind = page.Pages, 'p'
	}
	key := append([]byte("segment page\x00"), sessionID...)
	key = binary.AppendUvarint(append(key, 0, kind), uint64(page.Depth))
	for _, c := range refs {
		key = append(key, c.Ref[:]...)
		key = binary.AppendUvarint(key, uint64(c.Count))
	}
	if d, ok := x.storedDigest(key, remembered); ok {
		return d, nil
	}
	data, err := json.Marshal(page)
	if err != nil {
		return content.Digest{}, err
	}
	d, err := x.Blobs.Put(ctx, data)
	if err != nil {
		return content.Digest{}, err
	}
	if err := x.Files.PutEdges(ctx, d, childRefs(refs)); err != nil {
		return content.Digest{}, err
	}
	x.Pieces.Put(key, d, int64(len(key)+len(d)))
	return d, nil
}

// childRefs is the sorted, distinct refs of an index or a page: its edges.
func childRefs(refs []core.SegmentChunkRef) []content.Digest {
	kids := make([]content.Digest, len(refs))
	for i, c := range refs {
		kids[i] = c.Ref
	}
	content.SortDigests(kids)
	return slices.Compact(kids)
}

// storedDigest returns the digest a chunk or a page was stored under,
// when x.Pieces remembers it and remembered allows it.
func (x *Executor) storedDigest(key []byte, remembered bool) (content.Digest, bool) {
	if !remembered {
		return content.Digest{}, false
	}
	v, _ := x.Pieces.Get(key)
	d, ok := v.(content.Digest)
	return d, ok
}

// chunkKey names a chunk of a session's segment list by every field its
// stored form holds, without encoding it: SHA-256 over each field with
// its length. Digests are kept per session, like lowered entries. b is
// scratch space, returned grown for the next chunk.
func chunkKey(b []byte, sessionID string, chunk []core.CacheSegment) (key, scratch []byte) {
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
	return append([]byte("segment chunk\x00"), sum[:]...), b
}
