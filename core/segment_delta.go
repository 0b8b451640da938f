package core

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairn-agents/cairn/content"
)

// MediaRequestSegmentDelta is the media type of a segment list stored as
// what it changes in an earlier one: the JSON object
// {"base":{ContentRef},"keep":n,"segments":[…]}, meaning the first n
// segments of the list at base, then segments. A session's next request
// repeats all but the last few segments of its previous one, so storing
// that difference costs what the turn added, not what the session holds.
// The writer records an edge from the delta to its base, so a delta holds
// the lists it is read from.
const MediaRequestSegmentDelta = "application/vnd.cairn.request-segment-delta+json"

// SegmentDeltaDepth bounds the deltas between a stored list and the whole
// (or chunked) list it is read from: a reader reads at most this many more
// blobs, and the writer stores a list whole again after this many deltas.
const SegmentDeltaDepth = 32

// SegmentDelta is a stored MediaRequestSegmentDelta.
type SegmentDelta struct {
	Base     content.ContentRef `json:"base"`
	Keep     int                `json:"keep"`
	Segments []CacheSegment     `json:"segments"`
}

// EncodeSegmentDelta returns a delta's stored form.
func EncodeSegmentDelta(d SegmentDelta) ([]byte, error) {
	if d.Segments == nil {
		d.Segments = []CacheSegment{}
	}
	return json.Marshal(d)
}

// DecodeSegmentDelta reads a stored delta, checking that its base is a
// segment list and keep is not negative.
func DecodeSegmentDelta(data []byte) (SegmentDelta, error) {
	var d SegmentDelta
	if err := json.Unmarshal(data, &d); err != nil {
		return SegmentDelta{}, fmt.Errorf("segment delta: %w", err)
	}
	switch {
	case d.Base.Digest.IsZero():
		return SegmentDelta{}, fmt.Errorf("segment delta: no base")
	case !slices.Contains([]string{MediaRequestSegments, MediaRequestSegmentIndex, MediaRequestSegmentDelta}, d.Base.MediaType):
		return SegmentDelta{}, fmt.Errorf("segment delta: a base of media type %q is not a segment list", d.Base.MediaType)
	case d.Keep < 0:
		return SegmentDelta{}, fmt.Errorf("segment delta: keep %d", d.Keep)
	}
	return d, nil
}

// SegmentsPrefix is the number of leading segments a and b share. Lists
// that start at the same item are views of one core.SharedSlice (a
// request's list extends the last one's): the shorter is a prefix of the
// longer, so a long session's turn does not compare every segment.
func SegmentsPrefix(a, b []CacheSegment) int {
	n := 0
	if len(a) > 0 && len(b) > 0 && &a[0] == &b[0] {
		n = min(len(a), len(b))
	}
	for n < len(a) && n < len(b) && SameSegment(a[n], b[n]) {
		n++
	}
	return n
}

// SameSegment reports whether a and b are the same segment.
func SameSegment(a, b CacheSegment) bool {
	return a.Kind == b.Kind && a.Ref == b.Ref && a.Digest == b.Digest && a.Bytes == b.Bytes &&
		slices.Equal(a.Entries, b.Entries) && slices.Equal(a.Keys, b.Keys)
}
