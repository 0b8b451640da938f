package runtime

import (
	"context"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// PutSegments exposes putSegments to the external tests, for one session
// whose last request's list is last (nil: none).
func PutSegments(x *Executor, ctx context.Context, last *content.ContentRef, segs []core.CacheSegment) (content.ContentRef, error) {
	stored, err := x.putSegments(ctx, "s1", last, segs)
	return stored.ref, err
}

// PutSegmentsHeld is PutSegments through a store that holds the writes,
// as GenerateHeld does; it returns them.
func PutSegmentsHeld(x *Executor, ctx context.Context, last *content.ContentRef, segs []core.CacheSegment) (content.ContentRef, store.Batch, error) {
	y, writes := x.stage(true)
	stored, err := y.putSegments(ctx, "s1", last, segs)
	return stored.ref, writes.Held(), err
}

// PutSegmentsBytes is PutSegments that also returns how many segments
// begin the last list, their bytes and the list's bytes.
func PutSegmentsBytes(x *Executor, ctx context.Context, last *content.ContentRef, segs []core.CacheSegment) (content.ContentRef, int, int64, int64, error) {
	s, err := x.putSegments(ctx, "s1", last, segs)
	return s.ref, s.keep, s.keptBytes, s.bytes, err
}
