package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	ctemporal "github.com/cairn-agents/cairn/runtime/temporal"
)

// A worker's generations share one Pieces, and a long segment list is
// stored in chunks behind an index, as the local host stores it, rather
// than whole on every turn.
func TestWorkflow_GenerationsSharePiecesAndChunkLongSegmentLists(t *testing.T) {
	var pieces []*provider.Pieces
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, req provider.Request) (provider.Output, error) {
		pieces = append(pieces, req.Pieces)
		out, err := answer(ctx, b, "ok")
		for i := range 2 * core.SegmentChunk {
			out.Segments = append(out.Segments, core.CacheSegment{Kind: core.EntryMessage, Digest: core.SegmentDigest(fmt.Appendf(nil, "%d", i)), Bytes: 10})
		}
		return out, err
	}}
	env, st := unitEnv(t, adapter)
	ctx := context.Background()
	var errs [4]error
	env.RegisterDelayedCallback(func() { submit(t, env, core.OpenSession{AtMs: 1, SessionID: "s1", Config: unitConfig}, &errs[0]) }, 0)
	for i, at := range []time.Duration{time.Second, time.Minute} {
		item, err := runtime.TextInput(ctx, st, "go")
		if err != nil {
			t.Fatal(err)
		}
		env.RegisterDelayedCallback(func() {
			submit(t, env, core.StartRun{AtMs: int64(2 + i), RunID: fmt.Sprintf("r%d", i+1), Input: []core.InputItem{item}}, &errs[1+i])
		}, at)
	}
	env.RegisterDelayedCallback(func() { submit(t, env, core.CloseSession{AtMs: 9}, &errs[3]) }, time.Hour)
	env.ExecuteWorkflow(ctemporal.WorkflowName, ctemporal.SessionArgs{Universe: "u", SessionID: "s1"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}

	if len(pieces) != 2 || pieces[0] == nil || pieces[0] != pieces[1] {
		t.Fatalf("the generations got Pieces %v; want one shared by both", pieces)
	}
	evs, err := st.ReadAfter(ctx, "s1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Kind != core.KindTurnGenerationCompleted {
			continue
		}
		var p core.TurnGenerationCompleted
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		// The first list is stored in chunks behind an index; the second,
		// the same list, as a delta on it that holds it.
		want, children := core.MediaRequestSegmentIndex, 2
		if n == 1 {
			want, children = core.MediaRequestSegmentDelta, 1
		}
		if p.Cache == nil || p.Cache.Segments.MediaType != want || p.Cache.SegmentCount != 2*core.SegmentChunk {
			t.Fatalf("generation %d: cache facts %+v; want %d segments stored as %s", n+1, p.Cache, 2*core.SegmentChunk, want)
		}
		kids, err := st.Children(ctx, p.Cache.Segments.Digest)
		if err != nil || len(kids) != children {
			t.Fatalf("generation %d: the list holds %d blobs (%v), want %d", n+1, len(kids), err, children)
		}
		l, err := runtime.ReadSegments(ctx, st, p.Cache.Segments, nil)
		if err != nil || len(l.Segments) != 2*core.SegmentChunk {
			t.Fatalf("generation %d: read back %d segments, %v", n+1, len(l.Segments), err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d generations completed, want 2", n)
	}
}
