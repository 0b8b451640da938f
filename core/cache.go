package core

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/cairn-agents/cairn/content"
)

// Prompt-cache facts.
//
// Providers reuse a cached request prefix when a new request starts with the
// same material, in their order: tools, then instructions, then each message
// or item. An adapter that lowers a request also cuts it into those
// segments, in that order, and reports each one's digest and size. The
// executor stores the list as a blob (MediaRequestSegments) and the
// generation's event carries CacheFacts: the body size, the segment count and
// total, and the list's ref. Comparing two consecutive generations' lists
// (SharedPrefix) gives the bytes a request repeats from the previous one,
// without storing or rebuilding either request.
//
// The list is a blob rather than part of the event because it grows with the
// context: a segment takes about 100 bytes (a 154-segment Anthropic request
// of the scripted session lists in 15 KB), so a 200-message request would
// add ~20 KB to its event, and to Temporal history with it. The event holds
// the list's ref, which makes it a session root like every ref in an event;
// segment digests are not blob refs (see SegmentDigestPrefix), so a list
// declares no edges. A long list is stored in chunks behind an index
// (MediaRequestSegmentIndex), whose edges hold the chunks.

// SegmentDigestPrefix marks segment digests; like FingerprintPrefix it is
// deliberately not "sha256:", so a digest is never mistaken for a blob ref.
const SegmentDigestPrefix = "seg1:"

// MediaRequestSegments is the media type of a stored segment list: the JSON
// object {"segments":[CacheSegment…]}.
const MediaRequestSegments = "application/vnd.cairn.request-segments+json"

// Segment kinds besides the context entry kinds (message, catalog,
// tool_result, …), which name a segment lowered from entries of that kind.
const (
	SegmentTool         = "tool"         // one tool definition; Ref is its name
	SegmentInstructions = "instructions" // the assembled instructions (system prompt)
)

// CacheSegment is one piece of a lowered request in the order a provider
// matches cached prefixes.
type CacheSegment struct {
	// Kind is SegmentTool, SegmentInstructions, or the entry kind of the
	// (first) entry lowered into the segment.
	Kind string `json:"kind"`
	// Ref names a tool segment's tool.
	Ref string `json:"ref,omitempty"`
	// Digest is SegmentDigest of the segment's lowered bytes (and of what
	// else decides how the provider reads them, such as a block's role).
	Digest string `json:"digest"`
	// Bytes is the size of the segment's lowered bytes.
	Bytes int64 `json:"bytes"`
	// Entries and Keys are the ids and keys of the context entries lowered
	// into the segment, so a report can name the event that changed it.
	Entries []string `json:"entries,omitempty"`
	Keys    []string `json:"keys,omitempty"`
}

// SegmentDigest digests a segment's parts: 128 bits of SHA-256 over each
// part's length and bytes, as "seg1:<32 hex>". It only has to tell apart the
// segments at one position of two consecutive requests.
func SegmentDigest(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write(p)
	}
	return SegmentDigestPrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// NewCacheSegment describes lowered bytes made from entries (none for tools
// and framing). Extra parts, such as a role, go into the digest only.
func NewCacheSegment(kind, ref string, lowered []byte, entries []Entry, extra ...[]byte) CacheSegment {
	s := CacheSegment{Kind: kind, Ref: ref, Digest: SegmentDigest(append(append([][]byte(nil), extra...), lowered)...), Bytes: int64(len(lowered))}
	for _, e := range entries {
		s.Entries = append(s.Entries, e.ID)
		if e.Key != "" && !contains(s.Keys, e.Key) {
			s.Keys = append(s.Keys, e.Key)
		}
	}
	return s
}

// CacheFacts are a generation's request facts, recorded on its
// turn.generation_completed event.
type CacheFacts struct {
	// ProviderID, APIKind and Model are what the request was sent to: a
	// provider's cache never carries over to another model.
	ProviderID string `json:"providerId"`
	APIKind    string `json:"apiKind"`
	Model      string `json:"model"`
	// RequestBytes is the size of the request body sent (the first request,
	// when an adapter continues a paused turn with more).
	RequestBytes int64 `json:"requestBytes"`
	// SegmentBytes is the sum of the segments' Bytes: the request without
	// its framing (model, parameters, JSON punctuation).
	SegmentBytes int64 `json:"segmentBytes"`
	SegmentCount int   `json:"segmentCount"`
	// Segments is the stored list: MediaRequestSegments, or
	// MediaRequestSegmentIndex when it is long.
	Segments content.ContentRef `json:"segments"`
}

func (f *CacheFacts) validate() error {
	if f == nil {
		return nil
	}
	if err := f.Segments.Validate(); err != nil {
		return reject(RejectInvalidInput, "cache segments: %v", err)
	}
	if f.RequestBytes < 0 || f.SegmentBytes < 0 || f.SegmentCount < 0 {
		return reject(RejectInvalidInput, "cache facts must not be negative")
	}
	return nil
}

type segmentList struct {
	Segments []CacheSegment `json:"segments"`
}

// EncodeSegments is the stored form of a segment list.
func EncodeSegments(segs []CacheSegment) ([]byte, error) {
	if segs == nil {
		segs = []CacheSegment{}
	}
	return json.Marshal(segmentList{Segments: segs})
}

// DecodeSegments reads a stored segment list.
func DecodeSegments(data []byte) ([]CacheSegment, error) {
	var l segmentList
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("segment list: %w", err)
	}
	return l.Segments, nil
}

// MediaRequestSegmentIndex is the media type of a long segment list stored
// in chunks: the JSON object {"chunks":[{"ref":"sha256:…","count":n}…]},
// each chunk a MediaRequestSegments list of SegmentChunk segments (the last
// one fewer). Chunks cut at fixed positions, so the chunks of a prefix that
// did not change are the same blobs as the previous turn's: a turn stores
// its index, its changed chunks and nothing else, and no blob outgrows the
// inline limit. The writer records edges from the index to its chunks.
//
// A list of more than SegmentPage chunks names pages instead:
// {"pages":[{"ref":"sha256:…","count":n}…]}, each page an index of up to
// SegmentPage chunks (count is how many), cut at fixed positions too. The
// writer records edges from the index to its pages and from a new page to
// its chunks, so a turn records edges for its changed page alone, not for
// every chunk of a session that has grown long.
//
// A list of more than SegmentPage pages names pages of pages, as many
// levels as it takes for the index to name at most SegmentPage:
// {"pages":[…],"depth":d} names pages {"pages":[…],"depth":d-1}, down to
// depth 0 (the field absent), whose pages name chunks. A turn then
// stores, and records edges for, one changed page a level, however long
// the session. (Lists stored before pages nested name any number of pages
// at depth 0; they read as they are.)
const MediaRequestSegmentIndex = "application/vnd.cairn.request-segment-index+json"

// SegmentChunk is the number of segments per chunk (about 6 KB of JSON).
const SegmentChunk = 64

// SegmentPage is the number of chunks per page of a paged index, and of
// pages per page of pages.
const SegmentPage = 16

// SegmentMaxDepth bounds the depth of a page of pages: SegmentPage to the
// power of the levels, times SegmentChunk, is more segments than any
// request holds, and a read of damaged data nests no deeper.
const SegmentMaxDepth = 8

// SegmentIndex lists a chunked segment list's chunks in order, or its
// pages: pages of chunks at depth 0, pages of pages of depth Depth-1
// above it.
type SegmentIndex struct {
	Chunks []SegmentChunkRef `json:"chunks,omitempty"`
	Pages  []SegmentChunkRef `json:"pages,omitempty"`
	Depth  int               `json:"depth,omitempty"`
}

// SegmentChunkRef is one chunk and the number of segments it holds, or
// one page and the number of refs it holds.
type SegmentChunkRef struct {
	Ref   content.Digest `json:"ref"`
	Count int            `json:"count"`
}

// ChunkSegments cuts segs at every SegmentChunk-th position.
func ChunkSegments(segs []CacheSegment) [][]CacheSegment {
	var out [][]CacheSegment
	for len(segs) > 0 {
		n := min(SegmentChunk, len(segs))
		out = append(out, segs[:n])
		segs = segs[n:]
	}
	return out
}

// DecodeSegmentIndex reads a stored index, or a page of one.
func DecodeSegmentIndex(data []byte) (SegmentIndex, error) {
	var ix SegmentIndex
	if err := json.Unmarshal(data, &ix); err != nil {
		return SegmentIndex{}, fmt.Errorf("segment index: %w", err)
	}
	if (len(ix.Chunks) == 0) == (len(ix.Pages) == 0) {
		return SegmentIndex{}, fmt.Errorf("segment index: names neither chunks nor pages, or both")
	}
	for i, c := range ix.Chunks {
		if c.Ref.IsZero() || c.Count <= 0 || c.Count > SegmentChunk {
			return SegmentIndex{}, fmt.Errorf("segment index: chunk %d is not a ref with 1 to %d segments", i, SegmentChunk)
		}
	}
	for i, p := range ix.Pages {
		if p.Ref.IsZero() || p.Count <= 0 || p.Count > SegmentPage {
			return SegmentIndex{}, fmt.Errorf("segment index: page %d is not a ref with 1 to %d refs", i, SegmentPage)
		}
	}
	if ix.Depth < 0 || ix.Depth > SegmentMaxDepth || ix.Depth > 0 && len(ix.Chunks) > 0 {
		return SegmentIndex{}, fmt.Errorf("segment index: depth %d is not 0 to %d, or names chunks", ix.Depth, SegmentMaxDepth)
	}
	return ix, nil
}

// SegmentTotal is the sum of the segments' bytes.
func SegmentTotal(segs []CacheSegment) int64 {
	var n int64
	for i := range segs { // by index: a segment is a hundred bytes to copy
		n += segs[i].Bytes
	}
	return n
}

// SharedPrefix returns how many leading segments cur repeats from prev
// (same digest, same position) and their bytes.
func SharedPrefix(prev, cur []CacheSegment) (n int, size int64) {
	for n < len(prev) && n < len(cur) && prev[n].Digest == cur[n].Digest {
		size += prev[n].Bytes
		n++
	}
	return n, size
}
