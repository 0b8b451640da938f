package api_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// storedReads is a host without InspectLive: a server over it answers
// session/read from the store (checkpoint and tail) as for a session no
// host holds.
type storedReads struct {
	api.Host
	cps store.Checkpoints
}

func (h storedReads) Checkpoints() store.Checkpoints { return h.cps }

// rawRead is session/read's result as the server wrote it.
func rawRead(t *testing.T, c *api.Client, id string) string {
	t.Helper()
	var raw json.RawMessage
	if err := c.Call(context.Background(), api.MethodSessionRead, api.SessionParams{SessionID: id}, &raw); err != nil {
		t.Fatalf("session/read %s: %v", id, err)
	}
	return string(raw)
}

// session/read answers a live session from the host's state and any other
// from the store; the two answers are the same bytes at the same head: with
// an active run and a queued one, with a pending compaction, idle, closed,
// and after a restart.
func TestSessionRead_LiveAnswerIsTheStoredAnswer(t *testing.T) {
	ctx := context.Background()
	e := newReadEnv(t, true)
	stored := e.serve(storedReads{Host: e.host, cps: e.cps})
	same := func(when, id string) string {
		t.Helper()
		live, fromStore := rawRead(t, e.c, id), rawRead(t, stored, id)
		if live != fromStore {
			t.Fatalf("%s: session/read differs\nlive:   %s\nstored: %s", when, live, fromStore)
		}
		return live
	}
	created, err := e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel(), Instructions: "be brief", Tools: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.SessionID
	same("just created", id)

	e.model.setHold(true)
	r1, err := e.c.StartRun(ctx, api.RunStartParams{SessionID: id, Input: textInput("one")})
	if err != nil {
		t.Fatal(err)
	}
	e.model.waitArrived(t, 0)
	r2, err := e.c.StartRun(ctx, api.RunStartParams{SessionID: id, Input: textInput("two")})
	if err != nil {
		t.Fatal(err)
	}
	var busy api.SessionReadResult
	if err := json.Unmarshal([]byte(same("a run active, another queued", id)), &busy); err != nil {
		t.Fatal(err)
	}
	if busy.ActiveRun == nil || busy.ActiveRun.RunID != r1.RunID || len(busy.QueuedRuns) != 1 || busy.QueuedRuns[0].RunID != r2.RunID {
		t.Fatalf("session/read while busy = %+v, want run %s active and %s queued", busy, r1.RunID, r2.RunID)
	}
	e.model.setHold(false)
	e.model.releaseOne(t)
	(&env{c: e.c}).waitStatus(t, id, r2.RunID, core.StatusCompleted)
	same("idle after two runs", id)

	gate := make(chan struct{})
	e.model.mu.Lock()
	e.model.compactGate = gate
	e.model.mu.Unlock()
	if _, err := e.c.CompactContext(ctx, id); err != nil {
		t.Fatal(err)
	}
	var compacting api.SessionReadResult
	if err := json.Unmarshal([]byte(same("compaction pending", id)), &compacting); err != nil {
		t.Fatal(err)
	}
	if compacting.Compaction == nil {
		t.Fatal("session/read shows no pending compaction")
	}
	close(gate)
	if _, err := e.c.CloseSession(ctx, api.SessionCloseParams{SessionID: id}); err != nil {
		t.Fatal(err)
	}
	live := same("closed", id)

	e.restart() // the new host holds no session; its session/read reads the store
	if after := rawRead(t, e.c, id); after != live {
		t.Fatalf("session/read differs across a restart\nlive:    %s\nrestart: %s", live, after)
	}
	if e.host.InspectLive(id, func(*core.State) {}) {
		t.Fatal("session/read after the restart loaded the session")
	}
}

// session/read races neither with the host's own work nor with itself
// (the race detector watches), and a reader's head never goes back while
// the session's runs commit.
func TestSessionRead_ConcurrentWithRuns(t *testing.T) {
	ctx := context.Background()
	e := newReadEnv(t, true)
	created, err := e.c.CreateSession(ctx, api.CreateSessionParams{Model: testModel()})
	if err != nil {
		t.Fatal(err)
	}
	id := created.SessionID
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int64
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := e.c.ReadSession(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				if got.Head < last {
					t.Errorf("session/read went from head %d to %+v", last, got)
					return
				}
				last = got.Head
			}
		}()
	}
	var runID string
	for _, text := range []string{"one", "two", "three", "four"} {
		r, err := e.c.StartRun(ctx, api.RunStartParams{SessionID: id, Input: textInput(text)})
		if err != nil {
			t.Fatal(err)
		}
		runID = r.RunID
	}
	(&env{c: e.c}).waitStatus(t, id, runID, core.StatusCompleted)
	close(done)
	wg.Wait()
}
