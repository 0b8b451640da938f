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
	ref, _, err := x.putSegments(ctx, "s1", last, segs)
	return ref, err
}

// PutSegmentsHeld is PutSegments through a store that holds the writes,
// as GenerateHeld does; it returns them.
func PutSegmentsHeld(x *Executor, ctx context.Context, last *content.ContentRef, segs []core.CacheSegment) (content.ContentRef, store.Batch, error) {
	y, writes := x.stage(true)
	ref, _, err := y.putSegments(ctx, "s1", last, segs)
	return ref, writes.Held(), err
}
