package temporal_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	ctemporal "github.com/cairn-agents/cairn/runtime/temporal"
)

// A session whose state is larger than RehydrateInline is rehydrated from
// a chunked checkpoint: Rehydrate returns its index, and the workflow
// reads the chunks in batches no larger than ReadChunksBytes, then runs
// the session from the state they hold.
func TestWorkflow_RehydratesALargeStateInChunks(t *testing.T) {
	var sent int
	adapter := &script{fn: func(ctx context.Context, _ int, b blob.Store, req provider.Request) (provider.Output, error) {
		sent = len(req.Entries)
		return answer(ctx, b, "ok")
	}}
	env, st := unitEnv(t, adapter)
	ctx := context.Background()

	// A long session, written to the log before its workflow starts.
	state := core.NewState()
	admit := logWriter(t, st.Memory, "s1", state)
	admit(core.OpenSession{AtMs: 1, SessionID: "s1", Config: unitConfig})
	ref, err := blob.PutRef(ctx, st, []byte("a note"), content.MediaText, "")
	if err != nil {
		t.Fatal(err)
	}
	const notes = 1200
	for i := range notes {
		admit(core.AppendContext{AtMs: int64(2 + i), Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleUser, Content: ref,
			TokenEstimate: core.TokenEstimate{Tokens: 2, Quality: core.EstimateHeuristic}, Preview: fmt.Sprintf("%04d %s", i, strings.Repeat("n", core.MaxPreviewBytes-5))}}})
	}
	if whole, _ := core.EncodeCheckpoint(state); len(whole) <= ctemporal.RehydrateInline {
		t.Fatalf("the state is %d bytes; the test needs more than %d", len(whole), ctemporal.RehydrateInline)
	}

	// The activity returns the index, and the chunks read back in batches.
	var suite testsuite.WorkflowTestSuite
	aenv := suite.NewTestActivityEnvironment()
	acts := ctemporal.NewActivities(func(context.Context, string) (ctemporal.Store, error) { return st, nil }, nil, nil)
	aenv.RegisterActivity(acts)
	val, err := aenv.ExecuteActivity(acts.Rehydrate, ctemporal.RehydrateIn{Universe: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var out ctemporal.RehydrateOut
	if err := val.Get(&out); err != nil || len(out.Checkpoint) != 0 || len(out.Index) == 0 || len(out.Index) > ctemporal.RehydrateInline {
		t.Fatalf("Rehydrate of a large state: %d bytes whole, a %d-byte index (%v); want only an index", len(out.Checkpoint), len(out.Index), err)
	}
	refs, err := core.CheckpointChunkRefs(out.Index)
	if err != nil || len(refs) < 2 {
		t.Fatalf("the index names %d pages, %v", len(refs), err)
	}
	val, err = aenv.ExecuteActivity(acts.ReadCheckpointChunks, ctemporal.ReadChunksIn{Universe: "u", Digests: refs})
	if err != nil {
		t.Fatal(err)
	}
	var chunks ctemporal.ReadChunksOut
	if err := val.Get(&chunks); err != nil || len(chunks.Chunks) == 0 || len(chunks.Chunks) > len(refs) {
		t.Fatalf("read %d pages of %d, %v", len(chunks.Chunks), len(refs), err)
	}
	size := 0
	for _, c := range chunks.Chunks {
		size += len(c)
	}
	if size > ctemporal.ReadChunksBytes && len(chunks.Chunks) > 1 {
		t.Fatalf("one batch holds %d bytes, more than %d", size, ctemporal.ReadChunksBytes)
	}

	// The workflow rehydrates from them and runs a turn over every entry.
	var errs [2]error
	env.RegisterDelayedCallback(func() {
		submit(t, env, core.StartRun{AtMs: 5000, RunID: "r1", Input: []core.InputItem{{Content: ref, Preview: "go"}}}, &errs[0])
	}, time.Second)
	env.RegisterDelayedCallback(func() { submit(t, env, core.CloseSession{AtMs: 6000}, &errs[1]) }, time.Minute)
	env.ExecuteWorkflow(ctemporal.WorkflowName, ctemporal.SessionArgs{Universe: "u", SessionID: "s1"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	if sent != notes+1 {
		t.Fatalf("the turn sent %d entries, want the %d notes and the input", sent, notes)
	}
}
