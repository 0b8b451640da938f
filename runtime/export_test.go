package runtime

import (
	"context"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// PutSegments exposes putSegments to the external tests, for one session.
func PutSegments(x *Executor, ctx context.Context, segs []core.CacheSegment) (content.ContentRef, error) {
	return x.putSegments(ctx, "s1", segs)
}

// ExhaustDeltas makes the next list putSegments stores for the session a
// whole one, as after core.SegmentDeltaDepth deltas.
func ExhaustDeltas(x *Executor, sessionID string) {
	if l, ok := x.lastSegments(sessionID); ok {
		x.rememberSegments(sessionID, l.ref, l.segs, core.SegmentDeltaDepth)
	}
}
