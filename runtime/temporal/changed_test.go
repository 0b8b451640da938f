package temporal_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
)

// countingStore counts reads of the session catalog (what a poll costs).
type countingStore struct {
	*postgres.Store
	sessions atomic.Int64
}

func (s *countingStore) Session(ctx context.Context, id string) (core.Lifecycle, error) {
	s.sessions.Add(1)
	return s.Store.Session(ctx, id)
}

// pollingStore hides WaitAppend: the gateway has to poll it.
type pollingStore struct{ *countingStore }

func (s pollingStore) WaitAppend() {}

func pgStores(t *testing.T) (reader, writer *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Connect(ctx, testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	universe := runtime.RandomID("u")
	if err := db.EnsureUniverse(ctx, universe); err != nil {
		t.Fatal(err)
	}
	if reader, err = db.Store(ctx, universe, nil); err != nil {
		t.Fatal(err)
	}
	if writer, err = db.Store(ctx, universe, nil); err != nil {
		t.Fatal(err)
	}
	return reader, writer
}

func note(text string) core.Proposal {
	return core.Proposal{ObservedAtMs: 1, Kind: "test.note", Version: 1, Payload: []byte(`{"text":"` + text + `"}`)}
}

// The gateway's change watch costs nothing once its waiter's context ends
// (the long-poll's client went away), with PostgreSQL's notifications and
// with a store it has to poll; and a waiting watch wakes at an append made
// elsewhere (a worker).
func TestGateway_ChangedWatchEndsWithItsContextAndWakesOnAppend(t *testing.T) {
	reader, writer := pgStores(t)
	ctx := context.Background()
	if _, err := writer.Append(ctx, "s1", 0, []core.Proposal{note("a")}); err != nil {
		t.Fatal(err)
	}
	counted := &countingStore{Store: reader}
	for name, st := range map[string]temporal.Store{"notified": counted, "polled": pollingStore{counted}} {
		gw := temporal.NewGateway(nil, "q", "u", st, temporal.SessionArgs{})
		wctx, cancel := context.WithCancel(ctx)
		if _, _, err := gw.Changed(wctx, "s1"); err != nil {
			t.Fatal(err)
		}
		cancel()
		time.Sleep(50 * time.Millisecond) // a poll in flight at cancel may finish
		before := counted.sessions.Load()
		time.Sleep(500 * time.Millisecond)
		if n := counted.sessions.Load() - before; n != 0 {
			t.Fatalf("%s: %d session reads after the waiter left", name, n)
		}
	}

	gw := temporal.NewGateway(nil, "q", "u", counted, temporal.SessionArgs{})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	head, changed, err := gw.Changed(wctx, "s1")
	if err != nil || head != 1 {
		t.Fatalf("Changed = %d, %v", head, err)
	}
	before := counted.sessions.Load()
	if _, err := writer.Append(ctx, "s1", 1, []core.Proposal{note("b")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not wake at the append")
	}
	if n := counted.sessions.Load() - before; n != 0 {
		t.Fatalf("the notified watch read the session %d times while waiting", n)
	}
}
