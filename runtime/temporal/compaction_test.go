package temporal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
)

// compactor is a script that also compacts: it waits for gate, then
// answers a one-line summary.
type compactor struct {
	*script
	gate chan struct{}
}

func (c compactor) Compact(ctx context.Context, b blob.Store, req provider.CompactRequest) (provider.CompactOutput, error) {
	select {
	case <-c.gate:
	case <-ctx.Done():
		return provider.CompactOutput{}, ctx.Err()
	}
	ref, err := blob.PutRef(ctx, b, []byte("summary"), content.MediaText, "")
	if err != nil {
		return provider.CompactOutput{}, err
	}
	return provider.CompactOutput{Entries: []core.EntryInput{{Kind: core.EntrySummary, Content: ref, TokenEstimate: provider.Estimate([]byte("summary")), Preview: "summary"}}}, nil
}

// On Temporal, compaction runs as an activity, and a run submitted while it
// is pending waits in the workflow instead of being refused.
func TestTemporal_CompactionRunsAsAnActivityAndHoldsNewRuns(t *testing.T) {
	var lastReq provider.Request
	s := &script{fn: func(ctx context.Context, _ int, b blob.Store, req provider.Request) (provider.Output, error) {
		lastReq = req
		return answer(ctx, b, "ok")
	}}
	gate := make(chan struct{})
	e := newEnvWith(t, compactor{s, gate}, temporal.SessionArgs{})
	e.create("s1")
	if r := e.waitRun("s1", e.start("s1", "one")); r.Status != core.StatusCompleted {
		t.Fatalf("run 1 %s", r.Status)
	}
	if _, err := e.gw.Submit(context.Background(), "s1", core.RequestCompaction{AtMs: 1, CompactionID: "k1"}); err != nil {
		t.Fatal(err)
	}
	st, err := e.gw.Status(context.Background(), "s1")
	if err != nil || st.Compaction == nil || st.Compaction.ID != "k1" {
		t.Fatalf("status %+v %v: no pending compaction", st, err)
	}
	started := make(chan string, 1)
	go func() {
		item, err := runtime.TextInput(context.Background(), e.st, "two")
		if err != nil {
			t.Error(err)
		}
		adm, err := e.gw.Submit(context.Background(), "s1", core.StartRun{AtMs: 2, RunID: "run_two", Input: []core.InputItem{item}})
		if err != nil {
			t.Error(err)
		}
		started <- adm.RunID
	}()
	select {
	case <-started:
		t.Fatal("a run was admitted while compaction was pending")
	case <-time.After(300 * time.Millisecond):
	}
	close(gate)
	var runID string
	select {
	case runID = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the held run was never admitted")
	}
	if r := e.waitRun("s1", runID); r.Status != core.StatusCompleted {
		t.Fatalf("run 2 %s", r.Status)
	}
	if len(lastReq.Entries) != 2 || lastReq.Entries[0].Kind != core.EntrySummary {
		t.Fatalf("run 2's request %+v, want the summary then the new input", lastReq.Entries)
	}
	if n := e.kinds("s1")[core.KindCompactionCompleted]; n != 1 {
		t.Fatalf("%d compactions completed", n)
	}
}

// The workflow writes a reducer checkpoint when the session goes idle, and
// Rehydrate then reads only the tail.
func TestTemporal_CheckpointAtIdleBoundary(t *testing.T) {
	e := newEnv(t, &script{fn: func(ctx context.Context, _ int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}, temporal.SessionArgs{IdleCheckpointEvery: 1})
	e.create("s1")
	if r := e.waitRun("s1", e.start("s1", "one")); r.Status != core.StatusCompleted {
		t.Fatalf("run %s", r.Status)
	}
	head, err := e.st.Session(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		seq, _, err := e.st.LatestCheckpoint(context.Background(), "s1", 0)
		if err == nil && seq == head.Head {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint at the idle head %d (latest %d, %v)", head.Head, seq, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Closing a session right after a run (while its idle checkpoint may be in
// flight) is admitted and ends the workflow cleanly.
func TestTemporal_CloseRightAfterARun(t *testing.T) {
	e := newEnv(t, &script{fn: func(ctx context.Context, _ int, b blob.Store, _ provider.Request) (provider.Output, error) {
		return answer(ctx, b, "ok")
	}}, temporal.SessionArgs{})
	for i := range 4 {
		id := fmt.Sprintf("s%d", i)
		e.create(id)
		if r := e.waitRun(id, e.start(id, "one")); r.Status != core.StatusCompleted {
			t.Fatalf("run %s", r.Status)
		}
		if _, err := e.gw.Submit(context.Background(), id, core.CloseSession{AtMs: 9, Reason: "done"}); err != nil {
			t.Fatalf("close %s: %v", id, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := e.client.GetWorkflow(ctx, temporal.WorkflowID(e.universe, id), "").Get(ctx, nil)
		cancel()
		if err != nil {
			t.Fatalf("workflow of %s: %v", id, err)
		}
	}
}
