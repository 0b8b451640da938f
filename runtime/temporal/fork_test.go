package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store"
)

// userPreviews lists the previews of the request's user messages.
func userPreviews(req provider.Request) []string {
	var out []string
	for _, en := range req.Entries {
		if en.Kind == core.EntryMessage && en.Role == core.RoleUser {
			out = append(out, en.Preview)
		}
	}
	return out
}

// A history fork on Temporal: the gateway starts the fork's workflow, which
// rehydrates from the fork's effective log (from the checkpoint made at
// the fork point), runs like any session, and leaves the source alone.
func TestTemporal_ForkRunsInItsOwnWorkflow(t *testing.T) {
	var mu sync.Mutex
	var requests []provider.Request
	adapter := &script{fn: func(ctx context.Context, n int, b blob.Store, req provider.Request) (provider.Output, error) {
		mu.Lock()
		requests = append(requests, req)
		mu.Unlock()
		return answer(ctx, b, "ok")
	}}
	lastUsers := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return userPreviews(requests[len(requests)-1])
	}
	e := newEnv(t, adapter, temporal.SessionArgs{IdleCheckpointEvery: 1})
	ctx := context.Background()
	e.create("src")
	e.waitRun("src", e.start("src", "one"))
	life, err := e.st.Session(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	at, err := runtime.StateAt(ctx, e.st, e.st, e.st, "src", life.Head)
	if err != nil {
		t.Fatal(err)
	}
	forked, err := e.gw.ForkSession(ctx, store.ForkRequest{SessionID: "fork", Source: "src", AtSeq: life.Head, AtMs: 1,
		Projection: store.ProjectionOf(at)}, at)
	if err != nil {
		t.Fatal(err)
	}
	if forked.SessionID != "fork" || forked.Head != life.Head {
		t.Fatalf("fork = %+v", forked)
	}
	if seq, _, err := e.st.LatestCheckpoint(ctx, "fork", 0); err != nil || seq != life.Head {
		t.Fatalf("the fork's checkpoint: %d, %v", seq, err)
	}
	// The workflow runs and answers its status query before any command.
	var st temporal.Status
	deadline := time.Now().Add(30 * time.Second)
	for st, err = e.gw.Status(ctx, "fork"); err != nil && time.Now().Before(deadline); st, err = e.gw.Status(ctx, "fork") {
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || st.SessionID != "fork" || st.Head != life.Head || st.Closed {
		t.Fatalf("status of the fork: %+v, %v", st, err)
	}

	run := e.waitRun("fork", e.start("fork", "two"))
	if run.Status != core.StatusCompleted {
		t.Fatalf("run in the fork: %s %+v", run.Status, run.Error)
	}
	if got := lastUsers(); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("the fork's run sent %q", got)
	}
	e.kinds("fork") // contiguous from 1
	// The fork's workflow checkpoints the fork, idle at its head, under its own id.
	e.waitIdleCheckpoint("fork")
	if now, _ := e.st.Session(ctx, "src"); now.Head != life.Head {
		t.Fatalf("source head %d after the fork's run, want %d", now.Head, life.Head)
	}
	e.waitRun("src", e.start("src", "three"))
	if got := lastUsers(); !slices.Equal(got, []string{"one", "three"}) {
		t.Fatalf("the source's run sent %q", got)
	}
	if _, err := e.gw.ForkSession(ctx, store.ForkRequest{SessionID: "fork", Source: "src", AtSeq: 1, AtMs: 1}, nil); !isRejection(err, core.RejectSessionExists) {
		t.Fatalf("fork under a taken id: %v", err)
	}

	// Closed, the tree is deleted together. (Closing waits for the idle
	// checkpoint: a close racing the workflow's checkpoint activity fails
	// the update now and then, fork or not.)
	for _, id := range []string{"src", "fork"} {
		e.waitIdleCheckpoint(id)
		if _, err := e.gw.Submit(ctx, id, core.CloseSession{AtMs: 2}); err != nil {
			t.Fatalf("closing %s: %v", id, err)
		}
	}
	if _, err := e.gw.DeleteSession(ctx, "src", false); !errors.Is(err, store.ErrSessionHasForks) {
		t.Fatalf("delete of the source alone: %v", err)
	}
	ids, err := e.gw.DeleteSession(ctx, "src", true)
	if err != nil || !slices.Equal(ids, []string{"src", "fork"}) {
		t.Fatalf("cascade: %v, %v", ids, err)
	}
	if err := e.gw.Inspect(ctx, "fork", func(*core.State) {}); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("inspect of a deleted fork: %v", err)
	}
}

func isRejection(err error, kind string) bool {
	var rej *core.Rejection
	return errors.As(err, &rej) && rej.Kind == kind
}

// waitIdleCheckpoint waits for the session's workflow to checkpoint it at its
// head, and checks the checkpoint is of that session.
func (e *env) waitIdleCheckpoint(id string) {
	e.t.Helper()
	ctx := context.Background()
	life, err := e.st.Session(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		seq, d, err := e.st.LatestCheckpoint(ctx, id, 0)
		if err == nil && seq == life.Head {
			data, err := e.st.Get(ctx, d)
			if err != nil {
				e.t.Fatal(err)
			}
			// The index names the session; its chunks hold the rest.
			var ix struct{ SessionID string }
			if err := json.Unmarshal(data, &ix); err != nil || ix.SessionID != id {
				e.t.Fatalf("the checkpoint of %s is of %q, %v", id, ix.SessionID, err)
			}
			if _, err := core.CheckpointChunkRefs(data); err != nil {
				e.t.Fatalf("the checkpoint of %s: %v", id, err)
			}
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the latest checkpoint of %s is at %d (%v), its head at %d", id, seq, err, life.Head)
		}
	}
}
