package temporal

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

type cacheStore struct {
	*store.Memory
	blob.Store
}

// logOf writes a session of n context notes (after session.opened) to a
// fresh store and returns the store and the state a full replay gives.
func logOf(t *testing.T, sessionID, note string, n int) (cacheStore, *core.State) {
	t.Helper()
	ctx := context.Background()
	blobs := blob.NewMemory()
	st := cacheStore{Memory: store.NewMemory(blobs), Store: blobs}
	state := core.NewState()
	admit := func(cmd core.Command) {
		a, err := core.Admit(state, cmd)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Append(ctx, sessionID, state.Head, a.Proposals)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if err := state.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	admit(core.OpenSession{AtMs: 1, SessionID: sessionID, Config: core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}})
	for i := range n {
		ref, err := blob.PutRef(ctx, blobs, []byte(note), content.MediaText, "")
		if err != nil {
			t.Fatal(err)
		}
		admit(core.AppendContext{AtMs: int64(2 + i), Entries: []core.EntryInput{{Kind: core.EntryMessage, Role: core.RoleUser, Content: ref,
			TokenEstimate: core.TokenEstimate{Tokens: 2, Quality: core.EstimateHeuristic}, Preview: note}}})
	}
	return st, state
}

// A session deleted and created again under the same id, on a log this
// worker's cache has already followed, must not extend the stale state.
func TestStateCacheNoticesANewSessionUnderTheSameID(t *testing.T) {
	ctx := context.Background()
	c := newStateCache(8)
	old, _ := logOf(t, "s1", "old life", 2)
	if err := c.with(ctx, old, "u", "s1", 3, func(*core.State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	reborn, want := logOf(t, "s1", "new life", 4)
	wantCP, err := core.EncodeCheckpoint(want)
	if err != nil {
		t.Fatal(err)
	}
	err = c.with(ctx, reborn, "u", "s1", want.Head, func(s *core.State) error {
		got, err := core.EncodeCheckpoint(s)
		if err != nil {
			return err
		}
		if string(got) != string(wantCP) {
			t.Fatalf("the cache extended the deleted session's state:\n got %s\nwant %s", got, wantCP)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
