package temporal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	ctemporal "github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store"
)

// tailStore counts the events its reads return and can lose one seq.
type tailStore struct {
	memStore
	read atomic.Int64
	drop atomic.Int64
}

func (s *tailStore) ReadAfter(ctx context.Context, id string, after int64, limit int) ([]core.Event, error) {
	evs, err := s.memStore.ReadAfter(ctx, id, after, limit)
	var out []core.Event
	for _, ev := range evs {
		if ev.Seq != s.drop.Load() {
			out = append(out, ev)
		}
	}
	s.read.Add(int64(len(out)))
	return out, err
}

// Rehydrate starts from the session's checkpoint and reads only the events
// after it; a log missing an event it needs fails, not retryably, with the
// kind history_incomplete.
func TestRehydrate_LoadsFromTheCheckpointAndTheTail(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	st := &tailStore{memStore: memStore{Memory: store.NewMemory(blobs), Store: blobs}}
	state := core.NewState()
	admit := logWriter(t, st.Memory, "s1", state)
	admit(core.OpenSession{AtMs: 1, SessionID: "s1", Config: unitConfig})
	var cp []byte
	for i := range 6 {
		ref, err := blob.PutRef(ctx, blobs, []byte(fmt.Sprintf("note %d", i)), content.MediaText, "")
		if err != nil {
			t.Fatal(err)
		}
		admit(core.AppendContext{AtMs: int64(2 + i), Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleUser, Content: ref,
			TokenEstimate: core.TokenEstimate{Tokens: 2, Quality: core.EstimateHeuristic}, Preview: "note"}}})
		if i == 2 {
			var err error
			if cp, err = core.EncodeCheckpoint(state); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, err := core.EncodeCheckpoint(state)
	if err != nil {
		t.Fatal(err)
	}
	cpState, err := core.DecodeCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	d, err := blobs.Put(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutCheckpoint(ctx, "s1", cpState.Head, d); err != nil {
		t.Fatal(err)
	}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := ctemporal.NewActivities(func(context.Context, string) (ctemporal.Store, error) { return st, nil }, nil, nil)
	env.RegisterActivity(acts)
	rehydrate := func(id string) (ctemporal.RehydrateOut, error) {
		var out ctemporal.RehydrateOut
		val, err := env.ExecuteActivity(acts.Rehydrate, ctemporal.RehydrateIn{Universe: "u", SessionID: id})
		if err == nil {
			err = val.Get(&out)
		}
		return out, err
	}

	out, err := rehydrate("s1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Checkpoint, want) {
		t.Fatalf("rehydrated\n %s\nwant\n %s", out.Checkpoint, want)
	}
	if got, tail := st.read.Load(), state.Head-cpState.Head; got != tail {
		t.Fatalf("rehydrate read %d events, want the %d after the checkpoint at %d", got, tail, cpState.Head)
	}

	if out, err := rehydrate("ghost"); err != nil || len(out.Checkpoint) != 0 {
		t.Fatalf("rehydrating a session without events = %s, %v; want nothing", out.Checkpoint, err)
	}

	st.drop.Store(state.Head)
	_, err = rehydrate("s1")
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != runtime.KindHistoryIncomplete || !appErr.NonRetryable() {
		t.Fatalf("rehydrating over a log missing its last event: %v, want a non-retryable %s", err, runtime.KindHistoryIncomplete)
	}

	st.drop.Store(0)
	// A fresh worker's state cache starts from the checkpoint too: the
	// checkpoint activity at the head reads only the tail.
	fresh := ctemporal.NewActivities(func(context.Context, string) (ctemporal.Store, error) { return st, nil }, nil, nil)
	env.RegisterActivity(fresh)
	st.read.Store(0)
	if _, err := env.ExecuteActivity(fresh.Checkpoint, ctemporal.CheckpointIn{Universe: "u", SessionID: "s1", Head: state.Head}); err != nil {
		t.Fatal(err)
	}
	// The tail, and the head's event again to identify the history.
	if got, tail := st.read.Load(), state.Head-cpState.Head; got != tail+1 {
		t.Fatalf("a fresh worker's state cache read %d events, want the %d after the checkpoint and one more", got, tail)
	}
	loaded, rep, err := runtime.LoadStateReport(ctx, st, st, blobs, "s1", nil)
	if err != nil || rep.CheckpointSeq != state.Head || rep.Fallback != "" {
		t.Fatalf("loading after the checkpoint activity: %+v, %v", rep, err)
	}
	if data, err := core.EncodeCheckpoint(loaded); err != nil || !bytes.Equal(data, want) {
		t.Fatalf("the checkpoint written from the cached state differs from a full replay's: %v", err)
	}
}

// logWriter returns a function that admits a command to state and appends
// its events to the session's log, for tests that write a session's
// history before its workflow runs.
func logWriter(t *testing.T, log store.SessionLog, sessionID string, state *core.State) func(core.Command) {
	return func(cmd core.Command) {
		t.Helper()
		a, err := core.Admit(state, cmd)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := log.Append(context.Background(), sessionID, state.Head, a.Proposals)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if err := state.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
}
